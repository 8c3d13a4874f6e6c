// View › SPMD Mesh…: the device mesh of an SPMD run, read from the trace's
// file metadata (`spmd.mesh`, written by the runtime's partitioner), drawn
// as a grid of devices; for a tensor picked from the `spmd.sharding.<name>`
// attributes, each device's cell shows which tile of the tensor it holds
// (devices holding the same tile share a colour). The parsing and the tile
// arithmetic are plain functions, tested without a window.
#ifndef PODSCOPE_VIEWER_APP_MESH_VIEW_H_
#define PODSCOPE_VIEWER_APP_MESH_VIEW_H_

#include <QDialog>
#include <QWidget>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/viewer/trace_store.h"

class QComboBox;
class QMenu;

namespace podscope::viewer::app {

struct MeshLayout {
  std::vector<int64_t> shape;
  std::vector<std::string> axes;
  std::vector<int> devices;  // row-major over shape
};
// "shape=(2,2) axes=('data','model') devices=[0,1,2,3]", or nullopt.
std::optional<MeshLayout> ParseMeshAttribute(std::string_view text);
// "('data', None)" / "(('data', 'dim1'), None)" / "(None,)": the axes of
// each dimension, or nullopt.
std::optional<std::vector<std::vector<std::string>>> ParseSpecAttribute(
    std::string_view text);
// The tile the device at `position` holds: "[1/2, *]" (tile 1 of 2 along
// dimension 0, dimension 1 whole).
std::string TileLabel(const MeshLayout& mesh,
                      const std::vector<std::vector<std::string>>& spec,
                      int position);

struct MeshInfo {
  MeshLayout mesh;
  std::string mesh_text;
  std::map<std::string, std::string> shardings;  // tensor name -> spec
};
// From the first process with `spmd.mesh`; shardings of every process.
std::optional<MeshInfo> FindMesh(const TraceStore& store);

class MeshGrid : public QWidget {
 public:
  explicit MeshGrid(MeshLayout mesh, QWidget* parent = nullptr);
  // The tensor whose tiles to show; empty: only devices and coordinates.
  void SetSpec(std::vector<std::vector<std::string>> spec);
  // What cell `position` shows, line by line.
  QStringList CellLines(int position) const;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  MeshLayout mesh_;
  std::vector<std::vector<std::string>> spec_;
  bool has_spec_ = false;
};

class MeshViewDialog : public QDialog {
 public:
  MeshViewDialog(MeshInfo info, QWidget* parent = nullptr);
  QComboBox* tensors() const { return tensors_; }
  MeshGrid* grid() const { return grid_; }

 private:
  MeshInfo info_;
  QComboBox* tensors_;
  MeshGrid* grid_;
};

// Adds "SPMD &Mesh…" to `menu`: opens the dialog for the loaded trace, or
// says that it has no SPMD mesh.
void AddMeshViewAction(
    QMenu* menu, QWidget* parent,
    std::function<std::shared_ptr<const TraceStore>()> store);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_MESH_VIEW_H_
