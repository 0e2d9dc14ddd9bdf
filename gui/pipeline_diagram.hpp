// The plan's pipeline at a glance: its stages in order as boxes coloured by their chip's vendor,
// each with its island, layer range and tp x dp, joined by arrows, the cross-island boundaries
// (the activations that cross vendors over the fabric) as thick arrows, a stage that does not fit
// in memory with a dashed border. Rows wrap to the width.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>

#include <vector>

namespace hetplan::gui {

struct DiagramStage {
  QString island;
  QString vendor;  // the chip profile's vendor
  int first_layer = 0;
  int num_layers = 0;
  int tp = 1;
  int dp = 1;
  int ep = 1;  // expert parallelism among the dp replicas
  bool fits = true;
  bool cross_island_boundary = false;  // its sends to the next stage cross islands
};

// A vendor's colour: fixed for the vendors the bundled profiles name, a stable pick from a
// palette for others.
QColor vendor_colour(const QString& vendor);

class PipelineDiagram : public QWidget {
  Q_OBJECT

 public:
  explicit PipelineDiagram(QWidget* parent = nullptr);
  void set_stages(std::vector<DiagramStage> stages);
  const std::vector<DiagramStage>& stages() const { return stages_; }
  int boundaries_drawn() const;  // cross-island boundaries, as drawn

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  static constexpr int kBoxWidth = 150;
  static constexpr int kBoxHeight = 54;
  static constexpr int kGap = 24;
  static constexpr int kMargin = 8;
  int per_row(int width) const;
  std::vector<DiagramStage> stages_;
};

}  // namespace hetplan::gui
