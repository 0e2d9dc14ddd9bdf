// hetplan-gui: the desktop front end. `hetplan-gui [SCENARIO]` opens the scenario (default: the
// bundled one). `hetplan-gui --screenshot DIR [--size WxH] [SCENARIO]` opens it (at that size),
// searches, writes the main window to DIR/main.png (the three states) and DIR/plan.png (the best
// plan's detail), simulates that plan and writes DIR/simulation.png (its timeline),
// DIR/export.png (its export dialog) and DIR/compare.png (it pinned beside the third plan), then
// DIR/workload.png (the workload's settings), and quits (offscreen with
// QT_QPA_PLATFORM=offscreen).
#include <QApplication>
#include <QDir>
#include <QSize>
#include <QStringList>
#include <QTableView>
#include <QTimer>

#include <cstdio>

#include "formats/paths.hpp"
#include "gui/export_dialog.hpp"
#include "gui/main_window.hpp"
#include "gui/translation.hpp"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("hetplan-gui"));
  hetplan::gui::install_translation(app, QLocale());  // the system's locale (LANG)
  QStringList args = QApplication::arguments();
  args.removeFirst();
  QString screenshots;
  if (const auto at = args.indexOf(QStringLiteral("--screenshot")); at >= 0) {
    if (at + 1 >= args.size()) {
      std::fprintf(stderr, "error: --screenshot: expected a folder\n");
      return 2;
    }
    screenshots = args.at(at + 1);
    args.remove(at, 2);
  }
  // The window's size for the screenshots (WxH, e.g. 1366x768): how it looks on that screen.
  QSize size;
  if (const auto at = args.indexOf(QStringLiteral("--size")); at >= 0) {
    const QStringList parts = at + 1 < args.size() ? args.at(at + 1).split(QLatin1Char('x'))
                                                   : QStringList();
    bool width_ok = false, height_ok = false;
    if (parts.size() == 2) size = QSize(parts[0].toInt(&width_ok), parts[1].toInt(&height_ok));
    if (!width_ok || !height_ok || size.width() < 320 || size.height() < 240 ||
        size.width() > 10000 || size.height() > 10000) {
      std::fprintf(stderr, "error: --size: expected WIDTHxHEIGHT in pixels, e.g. 1366x768\n");
      return 2;
    }
    args.remove(at, 2);
  }
  const QString scenario =
      args.isEmpty() ? QString::fromStdString(hetplan::formats::bundled_path("scenarios/default.yaml"))
                     : args.front();
  hetplan::gui::MainWindow window;
  if (size.isValid()) window.resize(size);
  window.show();
  const bool opened = window.open_scenario(scenario);
  if (screenshots.isEmpty()) return QApplication::exec();
  if (!opened) {
    std::fprintf(stderr, "%s\n", window.message().toUtf8().constData());
    return 2;
  }
  bool saved = true;
  QObject::connect(&window, &hetplan::gui::MainWindow::search_done, &app, [&] {
    QDir().mkpath(screenshots);
    // The three states and why the best plan wins, then the best plan's detail.
    saved = window.grab().save(QDir(screenshots).filePath(QStringLiteral("main.png")));
    window.show_tab(1);
    saved = window.grab().save(QDir(screenshots).filePath(QStringLiteral("plan.png"))) && saved;
    if (!window.simulate_action()->isEnabled()) QApplication::exit(saved ? 0 : 1);
    window.simulate();
  });
  QObject::connect(&window, &hetplan::gui::MainWindow::simulation_done, &app, [&] {
    if (!window.simulation()) {
      std::fprintf(stderr, "%s\n", window.message().toUtf8().constData());
      QApplication::exit(1);
      return;
    }
    saved = window.grab().save(QDir(screenshots).filePath(QStringLiteral("simulation.png"))) && saved;
    // The export dialog of the same plan.
    if (auto* dialog = window.export_dialog()) {
      dialog->show();
      saved = dialog->grab().save(QDir(screenshots).filePath(QStringLiteral("export.png"))) && saved;
      delete dialog;
    }
    // What-if: the best plan pinned beside the third row's.
    window.pin_plan();
    window.plans_view()->selectRow(2);
    window.show_tab(3);
    saved = window.grab().save(QDir(screenshots).filePath(QStringLiteral("compare.png"))) && saved;
    window.show_tab(4);  // the workload's settings
    saved = window.grab().save(QDir(screenshots).filePath(QStringLiteral("workload.png"))) && saved;
    QApplication::exit(saved ? 0 : 1);
  });
  QTimer::singleShot(0, &window, [&] { window.search(); });
  return QApplication::exec();
}
