#include "gui/translation.hpp"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QTranslator>

namespace hetplan::gui {
namespace {

// Loads `name`'s catalogue for `locale` from `folder` and installs it; false when none is there.
bool install_catalogue(QCoreApplication& app, const QLocale& locale, const QString& name,
                       const QString& folder) {
  auto* translator = new QTranslator(&app);
  if (!translator->load(locale, name, QStringLiteral("_"), folder)) {
    delete translator;
    return false;
  }
  return QCoreApplication::installTranslator(translator);
}

// Where Qt keeps its own catalogues ("qtbase_zh_CN.qm": its file and progress dialogs' and
// standard buttons' words; Debian: qt6-translations-l10n).
QString qt_catalogue_folder() { return QLibraryInfo::path(QLibraryInfo::TranslationsPath); }

}  // namespace

bool install_translation(QCoreApplication& app, const QLocale& locale) {
  // ":/i18n/hetplan_zh_CN.qm" for zh_CN (and for zh_Hans_CN, zh_SG by QLocale's fallbacks).
  if (!install_catalogue(app, locale, QStringLiteral("hetplan"), QStringLiteral(":/i18n")))
    return false;
  // Without Qt's own catalogue its dialogs' words stay English.
  install_catalogue(app, locale, QStringLiteral("qtbase"), qt_catalogue_folder());
  return true;
}

bool qt_catalogue_installed(const QLocale& locale) {
  QTranslator probe;
  return probe.load(locale, QStringLiteral("qtbase"), QStringLiteral("_"), qt_catalogue_folder());
}

}  // namespace hetplan::gui
