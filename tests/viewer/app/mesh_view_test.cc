// View › SPMD Mesh…: the metadata the runtime writes parsed back, the tile
// each device holds for the seed's shardings, and the dialog showing them.
#include "mesh_view.h"

#include <QComboBox>
#include <QtTest>

namespace podscope::viewer::app {

class MeshViewTest : public QObject {
  Q_OBJECT

 private slots:
  void ParsesTheRuntimesMesh() {
    auto mesh = ParseMeshAttribute(
        "shape=(2,2,1,1) axes=('data','dim1','dim2','dim3') "
        "devices=[0,1,2,3]");
    QVERIFY(mesh.has_value());
    QCOMPARE(mesh->shape, (std::vector<int64_t>{2, 2, 1, 1}));
    QCOMPARE(mesh->axes[1], std::string("dim1"));
    QCOMPARE(mesh->devices.size(), size_t{4});
    QVERIFY(!ParseMeshAttribute("shape=(2,2) axes=('a') devices=[0,1,2,3]"));
    QVERIFY(!ParseMeshAttribute("shape=(2,2) axes=('a','b') devices=[0,1]"));
    QVERIFY(!ParseMeshAttribute("garbage"));
  }

  void ParsesSpecs() {
    auto spec = ParseSpecAttribute("(('data', 'dim1'), None)");
    QVERIFY(spec.has_value());
    QCOMPARE(spec->size(), size_t{2});
    QCOMPARE((*spec)[0], (std::vector<std::string>{"data", "dim1"}));
    QVERIFY((*spec)[1].empty());
    auto one = ParseSpecAttribute("(None,)");
    QVERIFY(one.has_value());
    QCOMPARE(one->size(), size_t{1});
    QVERIFY(!ParseSpecAttribute("('data', nope)"));
  }

  void TilesOfTheSeedsShardings() {
    auto mesh = *ParseMeshAttribute(
        "shape=(2,2) axes=('data','model') devices=[0,1,2,3]");
    // fc2.weight ('data', 'model'): every device its own tile.
    auto fc2 = *ParseSpecAttribute("('data', 'model')");
    QCOMPARE(TileLabel(mesh, fc2, 1), std::string("[0/2, 1/2]"));
    QCOMPARE(TileLabel(mesh, fc2, 2), std::string("[1/2, 0/2]"));
    // fc1.weight ('data', None): replicated over 'model'.
    auto fc1 = *ParseSpecAttribute("('data', None)");
    QCOMPARE(TileLabel(mesh, fc1, 0), TileLabel(mesh, fc1, 1));
    QCOMPARE(TileLabel(mesh, fc1, 3), std::string("[1/2, *]"));
    auto both = *ParseSpecAttribute("(('data', 'model'),)");
    QCOMPARE(TileLabel(mesh, both, 3), std::string("[3/4]"));
  }

  void DialogShowsTheSelectedTensor() {
    MeshInfo info;
    info.mesh = *ParseMeshAttribute(
        "shape=(2,2) axes=('data','model') devices=[4,5,6,7]");
    info.mesh_text = "shape=(2,2) axes=('data','model') devices=[4,5,6,7]";
    info.shardings["fc2.weight"] = "('data', 'model')";
    MeshViewDialog dialog(info);
    QCOMPARE(dialog.tensors()->count(), 2);
    QVERIFY(!dialog.grid()->CellLines(0).join("|").contains("tile"));
    dialog.tensors()->setCurrentIndex(1);
    const QString cell = dialog.grid()->CellLines(3).join("|");
    QVERIFY2(cell.contains("device 7"), qPrintable(cell));
    QVERIFY2(cell.contains("data=1 model=1"), qPrintable(cell));
    QVERIFY2(cell.contains("tile [1/2, 1/2]"), qPrintable(cell));
    dialog.resize(400, 200);
    QImage image(dialog.size(), QImage::Format_ARGB32);
    dialog.render(&image);  // paints the grid
  }
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::MeshViewTest)
#include "mesh_view_test.moc"
