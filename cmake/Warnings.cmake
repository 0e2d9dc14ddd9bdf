# Warnings for the project's own targets only: link hetplan_warnings, never set them globally.
add_library(hetplan_warnings INTERFACE)
target_compile_options(hetplan_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wconversion -Wnull-dereference
  -Wimplicit-fallthrough)
