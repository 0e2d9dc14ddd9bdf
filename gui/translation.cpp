#include "gui/translation.hpp"

#include <QCoreApplication>
#include <QTranslator>

namespace hetplan::gui {

bool install_translation(QCoreApplication& app, const QLocale& locale) {
  auto* translator = new QTranslator(&app);
  // ":/i18n/hetplan_zh_CN.qm" for zh_CN (and for zh_Hans_CN, zh_SG by QLocale's fallbacks).
  if (!translator->load(locale, QStringLiteral("hetplan"), QStringLiteral("_"),
                        QStringLiteral(":/i18n"))) {
    delete translator;
    return false;
  }
  return QCoreApplication::installTranslator(translator);
}

}  // namespace hetplan::gui
