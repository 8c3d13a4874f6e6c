// What the timeline renderer draws, read back from its pixels: a zoomed-out
// track's shade says how busy it is (a thread busy 1 % of the time is a
// faint tint, one busy all the time its name's full colour), and process
// rows name the program and its rank.
#include <QtTest>
#include <cmath>
#include <memory>
#include <string>

#include "podscope/viewer/trace_store.h"
#include "render_passes.h"
#include "timeline_renderer.h"
#include "trace_gen.h"
#include "track_layout.h"

namespace podscope::viewer::app {

class RenderTest : public QObject {
  Q_OBJECT

 private slots:
  void ZoomedOutShadeSaysHowBusyATrackIs();
  void BusyShadeRoundsEachChannelToNearest();
  void ProcessRowsNameTheProgramAndRank();
};

namespace {

constexpr int64_t kSlices = 100'000;
constexpr int64_t kPeriod = 1000;  // ns between slice starts

// One host, two threads: "sparse" runs a 10 ns slice every 1000 ns (1 %
// busy), "full" runs 1000 ns slices back to back (100 % busy).
std::unique_ptr<TraceStore> BusyStore() {
  const std::string dir = testing::TempDir("app_render_busy");
  testing::FileSpec spec;
  spec.host = "hostA";
  spec.pid = 4242;
  spec.process_index = 3;
  spec.process_count = 8;
  spec.command_line = {"/usr/bin/python3", "/home/me/train_mnist.py",
                       "--steps=10"};
  spec.strings = {"sparse_op", "full_op"};
  testing::TrackSpec sparse, full;
  sparse.name = "sparse";
  sparse.sort_index = 0;
  full.name = "full";
  full.sort_index = 1;
  for (int64_t i = 0; i < kSlices; ++i) {
    sparse.slices.push_back({i * kPeriod, 10, 1, 0});
    full.slices.push_back({i * kPeriod, kPeriod, 2, 0});
  }
  spec.tracks = {sparse, full};
  if (!testing::WriteFile(dir + "/hostA.4242.podtrace", spec).ok()) {
    return nullptr;
  }
  auto store = TraceStore::Open(dir);
  return store.ok() ? std::move(*store) : nullptr;
}

TrackId TrackNamed(const TraceStore& store, const std::string& name) {
  for (const TrackInfo& t : store.tracks()) {
    if (t.name == name) return t.id;
  }
  return static_cast<TrackId>(-1);
}

// How far a colour is from white, summed over the channels.
int Ink(QRgb c) {
  return (255 - qRed(c)) + (255 - qGreen(c)) + (255 - qBlue(c));
}

struct Painted {
  QImage image;
  QRect plot;
};

Painted PaintWindow(TimelineRenderer& renderer, const TraceStore& store,
                    const TrackLayout& layout, int64_t t0, int64_t t1) {
  const QRect area(0, 0, 1600, 400);
  TimelineState s;
  s.store = &store;
  s.layout = &layout;
  s.axis.SetWidth(TimelineRenderer::PlotRect(area).width());
  s.axis.SetBounds(store.first_ns(), store.last_ns());
  s.axis.SetWindow(t0, t1);
  Painted out{QImage(area.size(), QImage::Format_ARGB32_Premultiplied),
              TimelineRenderer::PlotRect(area)};
  out.image.fill(Qt::white);
  QPainter painter(&out.image);
  renderer.Paint(painter, area, s);
  return out;
}

// The colours down the middle of a track's first slice lane, one per
// plot pixel.
std::vector<QRgb> LaneColours(const Painted& p, const TrackLayout& layout,
                              TrackId track) {
  const int r = layout.RowOfTrack(track);
  const LayoutRow& row = layout.rows()[r];
  const int y =
      p.plot.y() + row.y + row.slice_top + TrackLayout::kLaneHeight / 2;
  std::vector<QRgb> colours;
  for (int x = p.plot.x(); x <= p.plot.right(); ++x) {
    colours.push_back(p.image.pixel(x, y));
  }
  return colours;
}

}  // namespace

void RenderTest::ZoomedOutShadeSaysHowBusyATrackIs() {
  auto store = BusyStore();
  QVERIFY(store != nullptr);
  TrackLayout layout;
  layout.Reset(store.get());
  TimelineRenderer renderer;
  renderer.SetStore(store.get());
  const TrackId sparse = TrackNamed(*store, "sparse");
  const TrackId full = TrackNamed(*store, "full");
  QVERIFY(layout.RowOfTrack(sparse) >= 0 && layout.RowOfTrack(full) >= 0);
  const QRgb sparse_colour =
      renderer.RgbOf(store->FindString("sparse_op").value());
  const QRgb full_colour = renderer.RgbOf(store->FindString("full_op").value());

  // The whole trace: about 60 slices per pixel on each track.
  const Painted out = PaintWindow(renderer, *store, layout, store->first_ns(),
                                  store->last_ns());
  const std::vector<QRgb> light = LaneColours(out, layout, sparse);
  const std::vector<QRgb> dark = LaneColours(out, layout, full);
  // Leave the edges and the grid lines out: compare the typical pixel.
  size_t faint = 0, solid = 0, checked = 0;
  for (size_t x = 10; x + 10 < light.size(); ++x) {
    ++checked;
    // 1 % busy: visible, but a faint tint of the name's colour.
    if (Ink(light[x]) > 0 && Ink(light[x]) * 4 < Ink(sparse_colour)) ++faint;
    // 100 % busy: the name's own colour.
    if (dark[x] == full_colour) ++solid;
  }
  QVERIFY2(faint * 10 >= checked * 9,
           qPrintable(QStringLiteral("%1 of %2 pixels of the 1 %-busy track "
                                     "are a faint tint")
                          .arg(faint)
                          .arg(checked)));
  QVERIFY2(solid * 10 >= checked * 9,
           qPrintable(QStringLiteral("%1 of %2 pixels of the busy track are "
                                     "its full colour")
                          .arg(solid)
                          .arg(checked)));

  // Zoomed in until each slice is wider than a pixel, the sparse track's
  // slices are drawn in their full colour: the shade is only for pixels
  // that stand for many slices.
  const int64_t t0 = store->first_ns() + 50 * kPeriod;
  const Painted near =
      PaintWindow(renderer, *store, layout, t0, t0 + 2 * kPeriod);
  const std::vector<QRgb> slices = LaneColours(near, layout, sparse);
  size_t full_pixels = 0;
  for (QRgb c : slices) full_pixels += c == sparse_colour ? 1 : 0;
  // Two slices of 10 ns, about 7 pixels each.
  QVERIFY2(full_pixels >= 8, qPrintable(QString::number(full_pixels)));
}

// Each channel of a shade is the colour's share of the mix with the
// background rounded to the nearest integer, halves up, as std::lround
// rounds it: over every channel value and shares in steps of 1/4096.
void RenderTest::BusyShadeRoundsEachChannelToNearest() {
  const QRgb bg = render::kBackground.rgb();
  int checked = 0;
  for (int v = 0; v < 256; ++v) {
    const QRgb colour = qRgb(v, 255 - v, (v * 7) % 256);
    for (int i = 0; i <= 4096; ++i) {
      const float busy = static_cast<float>(i) / 4096.0f;
      const float a =
          render::kMinBusyShade + (1.0f - render::kMinBusyShade) * busy;
      auto mix = [a](int c, int b) {
        return static_cast<int>(std::lround(c * a + b * (1.0f - a)));
      };
      const QRgb want =
          qRgb(mix(qRed(colour), qRed(bg)), mix(qGreen(colour), qGreen(bg)),
               mix(qBlue(colour), qBlue(bg)));
      const QRgb got = render::BusyShade(colour, busy);
      if (got != want) {
        QFAIL(qPrintable(QStringLiteral("colour %1 at %2 busy: %3, not %4")
                             .arg(colour, 0, 16)
                             .arg(busy)
                             .arg(got, 0, 16)
                             .arg(want, 0, 16)));
      }
      ++checked;
    }
  }
  QCOMPARE(checked, 256 * 4097);
}

void RenderTest::ProcessRowsNameTheProgramAndRank() {
  auto store = BusyStore();
  QVERIFY(store != nullptr);
  QCOMPARE(store->processes().size(), size_t{1});
  const QString label = render::ProcessLabel(store->processes()[0]);
  QCOMPARE(label,
           QStringLiteral("python3 train_mnist.py · rank 3/8 · pid 4242"));

  // Without a command line or a rank, the pid alone.
  ProcessInfo bare;
  bare.pid = 77;
  bare.process_index = -1;
  QCOMPARE(render::ProcessLabel(bare), QStringLiteral("pid 77"));
  // A native program: its file name without the folder.
  ProcessInfo native;
  native.pid = 5;
  native.process_index = 0;
  native.metadata.add_command_line("/opt/bin/trainer");
  native.metadata.add_command_line("--config=a.yaml");
  QCOMPARE(render::ProcessLabel(native),
           QStringLiteral("trainer · rank 0 · pid 5"));
}

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::RenderTest)
#include "render_test.moc"
