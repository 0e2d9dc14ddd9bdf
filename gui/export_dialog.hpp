// The export dialog: a plan of the search written for the scheduler as `hetplan export` writes it
// (Volcano Job, plan JSON, Megatron-LM / MindSpeed-LLM arguments, node labels), beside the plan
// file itself, into one folder at once. It shows where the plan's islands and boundaries stand
// on the validation ladder and refuses a plan the ladder has not validated, with the reasons,
// unless the override is ticked, which stamps every file as `--allow-unvalidated` does.
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

#include <optional>
#include <string>

#include "core/scenario.hpp"
#include "planner/search.hpp"
#include "validation/ladder.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QTextBrowser;

namespace hetplan::gui {

class ExportDialog : public QDialog {
  Q_OBJECT

 public:
  // `scenario` is the scenario as loaded from `scenario_path` (unedited); both outlive the dialog.
  ExportDialog(const Scenario& scenario, const QString& scenario_path,
               const planner::RankedPlan& plan, QWidget* parent = nullptr);

  // Exports with the dialog's choices. True when the files were written; message() says what
  // was written, or why nothing was (refused: the ladder's reasons; error: one line).
  bool export_now();
  QString message() const;
  QStringList written() const { return written_; }
  // The plan file written beside the exports ("<plan>.yaml"), which `hetplan export` reads.
  static QString plan_file_name(const Plan& plan);

  QComboBox* target_box() const { return target_; }
  QLineEdit* folder_edit() const { return folder_; }
  QLineEdit* image_edit() const { return image_; }
  QCheckBox* override_box() const { return override_; }
  bool validated() const { return validated_; }

 private:
  void show_outcome(const QString& text, bool error);

  const Scenario& scenario_;
  QString scenario_path_;
  const planner::RankedPlan& plan_;
  std::optional<validation::LadderReport> ladder_;
  bool validated_ = false;
  QComboBox* target_;
  QLineEdit* folder_;
  QLineEdit* image_;
  QCheckBox* override_;
  QTextBrowser* ladder_text_;
  QLabel* outcome_;
  QStringList written_;
};

}  // namespace hetplan::gui
