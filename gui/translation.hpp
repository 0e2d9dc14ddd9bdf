// The GUI's translations: Simplified Chinese ships with it (translations/hetplan_zh_CN.ts,
// compiled into the executable); any other locale keeps the English of the sources.
#pragma once

#include <QLocale>

class QCoreApplication;

namespace hetplan::gui {

// Installs the translation for `locale` into the application, if one ships; true when it did.
// With it, Qt's own catalogue for the locale (its dialogs' and standard buttons' words) where Qt's
// translations are installed. The translators live until the application ends.
bool install_translation(QCoreApplication& app, const QLocale& locale);

// Whether Qt's own catalogue for `locale` is installed beside Qt.
bool qt_catalogue_installed(const QLocale& locale);

}  // namespace hetplan::gui
