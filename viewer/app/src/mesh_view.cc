#include "mesh_view.h"

#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QVBoxLayout>
#include <cctype>

namespace podscope::viewer::app {
namespace {

// Splits "a,b,(c,d)" at top-level commas.
std::vector<std::string_view> TopLevel(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

// The text between `open` and its matching close after `key`.
std::optional<std::string_view> Field(std::string_view text,
                                      std::string_view key, char open,
                                      char close) {
  const size_t k = text.find(key);
  if (k == std::string_view::npos) return std::nullopt;
  const size_t a = k + key.size();
  if (a >= text.size() || text[a] != open) return std::nullopt;
  const size_t b = text.find(close, a);
  if (b == std::string_view::npos) return std::nullopt;
  return text.substr(a + 1, b - a - 1);
}

std::optional<std::string> Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() < 2 || s.front() != '\'' || s.back() != '\'') {
    return std::nullopt;
  }
  return std::string(s.substr(1, s.size() - 2));
}

bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::vector<int64_t> Coordinates(const MeshLayout& mesh, int position) {
  std::vector<int64_t> c(mesh.shape.size());
  int64_t rest = position;
  for (int i = static_cast<int>(mesh.shape.size()) - 1; i >= 0; --i) {
    c[i] = rest % mesh.shape[i];
    rest /= mesh.shape[i];
  }
  return c;
}

}  // namespace

std::optional<MeshLayout> ParseMeshAttribute(std::string_view text) {
  auto shape = Field(text, "shape=", '(', ')');
  auto axes = Field(text, "axes=", '(', ')');
  auto devices = Field(text, "devices=", '[', ']');
  if (!shape || !axes || !devices) return std::nullopt;
  MeshLayout mesh;
  int64_t product = 1;
  for (std::string_view p : TopLevel(*shape)) {
    int64_t v;
    if (!ParseInt(p, &v) || v <= 0) return std::nullopt;
    mesh.shape.push_back(v);
    product *= v;
  }
  for (std::string_view p : TopLevel(*axes)) {
    auto name = Unquote(p);
    if (!name) return std::nullopt;
    mesh.axes.push_back(*name);
  }
  for (std::string_view p : TopLevel(*devices)) {
    int64_t v;
    if (!ParseInt(p, &v)) return std::nullopt;
    mesh.devices.push_back(static_cast<int>(v));
  }
  if (mesh.axes.size() != mesh.shape.size() ||
      static_cast<int64_t>(mesh.devices.size()) != product) {
    return std::nullopt;
  }
  return mesh;
}

std::optional<std::vector<std::vector<std::string>>> ParseSpecAttribute(
    std::string_view text) {
  text = Trim(text);
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    return std::nullopt;
  }
  std::vector<std::vector<std::string>> spec;
  std::vector<std::string_view> parts =
      TopLevel(text.substr(1, text.size() - 2));
  if (!parts.empty() && Trim(parts.back()).empty()) parts.pop_back();  // (x,)
  for (std::string_view p : parts) {
    p = Trim(p);
    std::vector<std::string> axes;
    if (p == "None") {
    } else if (!p.empty() && p.front() == '(' && p.back() == ')') {
      for (std::string_view q : TopLevel(p.substr(1, p.size() - 2))) {
        auto name = Unquote(q);
        if (!name) return std::nullopt;
        axes.push_back(*name);
      }
    } else {
      auto name = Unquote(p);
      if (!name) return std::nullopt;
      axes.push_back(*name);
    }
    spec.push_back(std::move(axes));
  }
  return spec;
}

std::string TileLabel(const MeshLayout& mesh,
                      const std::vector<std::vector<std::string>>& spec,
                      int position) {
  const std::vector<int64_t> coords = Coordinates(mesh, position);
  std::string label = "[";
  for (size_t d = 0; d < spec.size(); ++d) {
    if (d > 0) label += ", ";
    int64_t index = 0;
    int64_t count = 1;
    for (const std::string& axis : spec[d]) {
      for (size_t a = 0; a < mesh.axes.size(); ++a) {
        if (mesh.axes[a] != axis) continue;
        index = index * mesh.shape[a] + coords[a];
        count *= mesh.shape[a];
      }
    }
    label +=
        count == 1 ? "*" : std::to_string(index) + "/" + std::to_string(count);
  }
  return label + "]";
}

std::optional<MeshInfo> FindMesh(const TraceStore& store) {
  std::optional<MeshInfo> info;
  for (const ProcessInfo& p : store.processes()) {
    const auto& attributes = p.metadata.attributes();
    if (!info) {
      auto it = attributes.find("spmd.mesh");
      if (it == attributes.end()) continue;
      auto mesh = ParseMeshAttribute(it->second);
      if (!mesh) continue;
      info = MeshInfo{*std::move(mesh), it->second, {}};
    }
    for (const auto& [key, value] : attributes) {
      constexpr std::string_view kPrefix = "spmd.sharding.";
      if (key.rfind(kPrefix, 0) == 0) {
        info->shardings[key.substr(kPrefix.size())] = value;
      }
    }
  }
  return info;
}

MeshGrid::MeshGrid(MeshLayout mesh, QWidget* parent)
    : QWidget(parent), mesh_(std::move(mesh)) {
  setMinimumSize(240, 120);
}

void MeshGrid::SetSpec(std::vector<std::vector<std::string>> spec) {
  spec_ = std::move(spec);
  has_spec_ = true;
  update();
}

QStringList MeshGrid::CellLines(int position) const {
  QStringList lines;
  lines << QString("device %1").arg(mesh_.devices[position]);
  const std::vector<int64_t> c = Coordinates(mesh_, position);
  QStringList coords;
  for (size_t a = 0; a < c.size(); ++a) {
    coords << QString("%1=%2")
                  .arg(QString::fromStdString(mesh_.axes[a]))
                  .arg(c[a]);
  }
  lines << coords.join(" ");
  if (has_spec_) {
    lines << QString::fromStdString("tile " +
                                    TileLabel(mesh_, spec_, position));
  }
  return lines;
}

QSize MeshGrid::sizeHint() const {
  const int rows = mesh_.shape.empty() ? 1 : static_cast<int>(mesh_.shape[0]);
  const int cols = static_cast<int>(mesh_.devices.size()) / std::max(rows, 1);
  return QSize(cols * 190 + 20, rows * 80 + 20);
}

void MeshGrid::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const int n = static_cast<int>(mesh_.devices.size());
  const int rows = mesh_.shape.empty() ? 1 : static_cast<int>(mesh_.shape[0]);
  const int cols = std::max(1, n / std::max(rows, 1));
  const double w = (width() - 10.0) / cols;
  const double h = (height() - 10.0) / rows;
  for (int p = 0; p < n; ++p) {
    const QRectF cell(5 + (p % cols) * w, 5 + (p / cols) * h, w - 4, h - 4);
    QColor fill = palette().base().color();
    if (has_spec_) {
      // Devices holding the same tile share a colour.
      const size_t hash = std::hash<std::string>()(TileLabel(mesh_, spec_, p));
      fill = QColor::fromHsv(static_cast<int>(hash % 360), 60, 240);
    }
    painter.fillRect(cell, fill);
    painter.setPen(palette().text().color());
    painter.drawRect(cell);
    painter.drawText(cell, Qt::AlignCenter, CellLines(p).join("\n"));
  }
}

MeshViewDialog::MeshViewDialog(MeshInfo info, QWidget* parent)
    : QDialog(parent), info_(std::move(info)) {
  setWindowTitle(tr("SPMD Mesh"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(
      new QLabel(QString::fromStdString("mesh " + info_.mesh_text), this));
  tensors_ = new QComboBox(this);
  tensors_->addItem(tr("(devices only)"));
  for (const auto& [name, spec] : info_.shardings) {
    tensors_->addItem(QString::fromStdString(name + "  " + spec),
                      QString::fromStdString(name));
  }
  layout->addWidget(tensors_);
  grid_ = new MeshGrid(info_.mesh, this);
  layout->addWidget(grid_, 1);
  connect(tensors_, QOverload<int>::of(&QComboBox::currentIndexChanged), this,
          [this](int index) {
            if (index <= 0) return;
            const std::string name =
                tensors_->itemData(index).toString().toStdString();
            auto spec = ParseSpecAttribute(info_.shardings[name]);
            if (spec) grid_->SetSpec(*std::move(spec));
          });
}

void AddMeshViewAction(
    QMenu* menu, QWidget* parent,
    std::function<std::shared_ptr<const TraceStore>()> store) {
  QAction* action = menu->addAction(QObject::tr("SPMD &Mesh…"));
  QObject::connect(action, &QAction::triggered, parent, [parent, store] {
    std::shared_ptr<const TraceStore> s = store();
    std::optional<MeshInfo> info;
    if (s != nullptr) info = FindMesh(*s);
    if (!info) {
      QMessageBox::information(
          parent, QObject::tr("SPMD Mesh"),
          QObject::tr("The loaded trace has no SPMD mesh (the runtime writes "
                      "'spmd.mesh' into the file metadata when it partitions "
                      "a program)."));
      return;
    }
    auto* dialog = new MeshViewDialog(*std::move(info), parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
  });
}

}  // namespace podscope::viewer::app
