// The GUI's translations: Simplified Chinese ships with it (translations/hetplan_zh_CN.ts,
// compiled into the executable); any other locale keeps the English of the sources.
#pragma once

#include <QLocale>

class QCoreApplication;

namespace hetplan::gui {

// Installs the translation for `locale` into the application, if one ships; true when it did.
// The translator lives until the application ends.
bool install_translation(QCoreApplication& app, const QLocale& locale);

}  // namespace hetplan::gui
