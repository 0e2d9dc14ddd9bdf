#!/bin/sh
# Refreshes hetplan_zh_CN.ts from the GUI's sources (new strings come in unfinished; translate
# them with Qt Linguist or by hand, and drop type="unfinished"). lupdate 6.4 does not read
# `namespace hetplan::gui {`, so it names the contexts by the bare class names: they are renamed
# to the classes' full names, which tr() looks them up by, and back for the next update.
set -eu
cd "$(dirname "$0")/.."
ts=translations/hetplan_zh_CN.ts
classes='IslandsModel|MainWindow|PlansModel|StagesModel|SearchRunner|SimulationRunner|TimelineView|ExportDialog|PipelineDiagram|ComparisonModel'
sed -i -E "s#<name>hetplan::gui::($classes)</name>#<name>\1</name>#" "$ts"
/usr/lib/qt6/bin/lupdate -silent -no-obsolete main_window.hpp models.hpp search_runner.hpp \
  simulation_runner.hpp timeline.hpp export_dialog.hpp pipeline_diagram.hpp comparison.hpp \
  main_window.cpp models.cpp search_runner.cpp simulation_runner.cpp timeline.cpp \
  export_dialog.cpp pipeline_diagram.cpp comparison.cpp main.cpp -ts "$ts"
sed -i -E "s#<name>($classes)</name>#<name>hetplan::gui::\1</name>#" "$ts"
