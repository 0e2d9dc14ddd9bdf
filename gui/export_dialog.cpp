#include "gui/export_dialog.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <exception>
#include <stdexcept>

#include "core/error.hpp"
#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "sim/estimator.hpp"

namespace hetplan::gui {

QString ExportDialog::plan_file_name(const Plan& plan) {
  return QString::fromStdString(plan.name) + QStringLiteral(".yaml");
}

ExportDialog::ExportDialog(const Scenario& scenario, const QString& scenario_path,
                           const planner::RankedPlan& plan, QWidget* parent)
    : QDialog(parent), scenario_(scenario), scenario_path_(scenario_path), plan_(plan) {
  setWindowTitle(tr("Export plan %1").arg(QString::fromStdString(plan.plan.name)));
  resize(760, 560);
  auto* layout = new QVBoxLayout(this);
  ladder_text_ = new QTextBrowser(this);
  QString html;
  try {
    ladder_ = validation::scenario_ladder(scenario_);
  } catch (const std::exception& error) {
    html += QStringLiteral("<p style=\"color:#b00020\">error: %1</p>")
                .arg(QString::fromStdString(error.what()).toHtmlEscaped());
  }
  const validation::PlanValidation validation =
      validation::plan_validation(ladder_ ? &*ladder_ : nullptr, plan.plan);
  validated_ = validation.validated;
  if (validated_) {
    html += tr("<p><b>Validated:</b> every island and boundary of the plan has passed the "
               "validation ladder.</p>");
  } else {
    html += tr("<p><b>Not validated.</b> The ladder lacks, for this plan:</p><ul>");
    for (const auto& missing : validation.missing)
      html += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(missing).toHtmlEscaped());
    html += QStringLiteral("</ul>");
  }
  // Where each island and boundary stands, and what each rung still needs (without records:
  // all of it).
  const validation::LadderReport shown = ladder_ ? *ladder_ : validation::ladder_state(scenario_.cluster, {});
  html += (ladder_ ? tr("<p>The validation ladder of cluster %1:</p>")
                   : tr("<p>The validation ladder of cluster %1, with no records yet:</p>"))
              .arg(QString::fromStdString(scenario_.cluster.name).toHtmlEscaped());
  html += QStringLiteral("<pre>%1</pre>")
              .arg(QString::fromStdString(validation::ladder_text(shown)).toHtmlEscaped());
  ladder_text_->setHtml(html);
  layout->addWidget(ladder_text_, 1);

  auto* form = new QFormLayout();
  target_ = new QComboBox(this);
  target_->addItem(tr("Volcano Job and HyperNodes"), QStringLiteral("volcano"));
  target_->addItem(tr("Plan JSON (scheduler extender)"), QStringLiteral("json"));
  target_->addItem(tr("Megatron-LM / MindSpeed-LLM arguments"), QStringLiteral("megatron"));
  target_->addItem(tr("Node labels (kubectl label)"), QStringLiteral("labels"));
  target_->addItem(tr("kube-scheduler with the extender"), QStringLiteral("kube-scheduler"));
  form->addRow(tr("Export as"), target_);
  auto* folder_row = new QHBoxLayout();
  folder_ = new QLineEdit(this);
  auto* browse = new QPushButton(tr("Browse..."), this);
  folder_row->addWidget(folder_, 1);
  folder_row->addWidget(browse);
  form->addRow(tr("Into folder"), folder_row);
  image_ = new QLineEdit(this);
  image_->setPlaceholderText(tr("each island's image from the cluster file, else %1")
                                 .arg(QString::fromLatin1(exporters::kDefaultImage)));
  form->addRow(tr("Container image"), image_);
  override_ = new QCheckBox(tr("Export although the plan is not validated (every file says so, "
                               "as --allow-unvalidated does)"),
                            this);
  override_->setVisible(!validated_);
  form->addRow(QString(), override_);
  layout->addLayout(form);
  outcome_ = new QLabel(this);
  outcome_->setWordWrap(true);
  outcome_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(outcome_);
  // Its own Close (not the standard button), so the dialog's translation covers it even where
  // Qt's own catalogues (a separate package) are missing.
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(tr("Close"), QDialogButtonBox::RejectRole);
  QPushButton* export_button = buttons->addButton(tr("Export"), QDialogButtonBox::ActionRole);
  layout->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(export_button, &QPushButton::clicked, this, [this] { export_now(); });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Export into"), folder_->text());
    if (!folder.isEmpty()) folder_->setText(folder);
  });
}

QString ExportDialog::message() const { return outcome_->text(); }

void ExportDialog::show_outcome(const QString& text, bool error) {
  outcome_->setText(text);
  outcome_->setStyleSheet(error ? QStringLiteral("color: #b00020") : QString());
}

bool ExportDialog::export_now() {
  written_.clear();
  const std::string folder = folder_->text().trimmed().toStdString();
  if (folder.empty()) {
    show_outcome(tr("error: choose a folder to export into"), true);
    return false;
  }
  try {
    const auto target = exporters::export_target(target_->currentData().toString().toStdString());
    if (!target) throw std::logic_error("unknown export target");
    // The plan file, as `hetplan plan --out` writes it: it names its scenario (relative to the
    // folder) and the scenario's hash, so that `hetplan export` reads it back without
    // --scenario.
    const std::string scenario_file = scenario_path_.toStdString();
    const Plan recorded = exporters::plan_naming_scenario(
        plan_.plan, scenario_file, exporters::sha256_hex(formats::read_text_file(scenario_file)), folder);
    const std::string comment =
        "Exported by hetplan-gui from the plan search of scenario " + scenario_.name + " (" +
        std::string(to_string(plan_.mode)) + "), " +
        std::to_string(static_cast<long long>(plan_.tokens_per_s)) + " tokens/s on " +
        std::to_string(plan_.chips) + " chips.";
    const std::string plan_text = formats::plan_yaml(recorded, comment);
    const std::string plan_name = plan_file_name(plan_.plan).toStdString();
    // The estimate as `hetplan export` makes it, from the plan alone.
    const sim::Estimate estimate =
        sim::estimate_step(scenario_.cluster, scenario_.workload, plan_.plan);
    exporters::ExportInput input = exporters::plan_export_input(
        scenario_, scenario_file, plan_.plan, estimate, ladder_, plan_name, plan_text);
    input.allow_unvalidated = override_->isChecked();
    input.image = image_->text().trimmed().toStdString();
    std::vector<formats::NamedText> files{{plan_name, plan_text}};
    for (auto& file : exporters::export_plan(input, *target))
      files.push_back({std::move(file.name), std::move(file.text)});
    for (const auto& path : formats::write_folder_atomically(folder, files))
      written_ << QString::fromStdString(path);
    QString text = tr("wrote %1").arg(written_.join(QStringLiteral(", ")));
    if (!input.validation.validated)
      text += tr("\nnote: exported unvalidated, as asked; every file says so");
    show_outcome(text, false);
    return true;
  } catch (const exporters::UnvalidatedPlan& refused) {
    show_outcome(QStringLiteral("refused: ") + QString::fromStdString(refused.what()), true);
  } catch (const InputError& error) {
    show_outcome(QStringLiteral("error: ") + QString::fromStdString(error.what()), true);
  } catch (const std::exception& error) {
    show_outcome(QStringLiteral("error: %1: %2").arg(folder_->text(), QString::fromStdString(error.what())),
                 true);
  }
  return false;
}

}  // namespace hetplan::gui
