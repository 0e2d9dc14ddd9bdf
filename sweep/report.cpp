// The sweep's HTML report: one self-contained file (no script, no network), its charts inline
// SVG drawn here. docs/sweep.md#report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "sweep/sweep.hpp"

namespace hetplan::sweep {
namespace {

using nlohmann::ordered_json;

std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// A figure with three significant digits and a k/M suffix: 161742.9 -> "162k".
std::string short_number(double value) {
  const double a = std::abs(value);
  char text[64];
  if (a >= 1e6) std::snprintf(text, sizeof text, "%.3gM", value / 1e6);
  else if (a >= 1e3) std::snprintf(text, sizeof text, "%.3gk", value / 1e3);
  else std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// A member of a JSON object, or null when the object has none (const operator[] would be
// undefined for a missing key).
const ordered_json& member(const ordered_json& object, const char* key) {
  static const ordered_json none;
  if (!object.is_object()) return none;
  const auto found = object.find(key);
  return found == object.end() ? none : *found;
}

// An axis path as a label: "cluster.islands[dcu-k100].nodes" -> "dcu-k100 nodes".
std::string short_path(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::string field = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::size_t open = path.rfind('[');
  const std::size_t close = path.rfind(']');
  if (open != std::string::npos && close != std::string::npos && close > open)
    return path.substr(open + 1, close - open - 1) + " " + field;
  return field;
}

// A string member, or `otherwise`.
std::string text_at(const ordered_json& object, const char* key, const std::string& otherwise = {}) {
  const ordered_json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : otherwise;
}

std::optional<double> number_at(const ordered_json& object, const char* key) {
  if (!member(object, key).is_number()) return std::nullopt;
  const double value = member(object, key).get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

struct Series {
  std::string name;
  std::string colour;
  std::vector<std::optional<double>> y;  // one per x position
  bool dashed = false;
  // The 80% interval of each y, where known: drawn as an error bar.
  std::vector<std::optional<std::pair<double, double>>> range = {};
};

// The 80% interval of `key` in a plan summary's interval_80 (docs/models/uncertainty.md).
std::optional<std::pair<double, double>> interval_at(const ordered_json& plan, const char* key) {
  if (!plan.is_object() || !plan.contains("interval_80") || !plan["interval_80"].is_object())
    return std::nullopt;
  const ordered_json& i = plan["interval_80"];
  if (!i.contains(key) || !i[key].is_object()) return std::nullopt;
  const auto low = number_at(i[key], "low"), high = number_at(i[key], "high");
  if (!low || !high) return std::nullopt;
  return std::pair{*low, *high};
}

const char* const kPalette[] = {"#1f4e9c", "#c0392b", "#27864a", "#8e44ad", "#d4880f", "#16a2b8",
                                "#6d4c41", "#5d6d7e"};

// A line chart over categories (the axis's values, in order) with a y axis from 0.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<std::string>& x,
                       const std::vector<Series>& series) {
  const double width = 760, height = 340, left = 80, right = 220, top = 36, bottom = 56;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double y_max = 0;
  for (const auto& s : series) {
    for (const auto& v : s.y)
      if (v) y_max = std::max(y_max, *v);
    for (const auto& r : s.range)
      if (r) y_max = std::max(y_max, r->second);
  }
  if (y_max <= 0) y_max = 1;
  // A round top: 1, 2 or 5 times a power of ten.
  const double magnitude = std::pow(10.0, std::floor(std::log10(y_max)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (y_max / (m * magnitude) <= 5) {
      step = m * magnitude;
      break;
    }
  }
  const double y_top = std::ceil(y_max / step) * step;
  auto px = [&](std::size_t i) {
    return left + (x.size() <= 1 ? plot_w / 2 : plot_w * static_cast<double>(i) / static_cast<double>(x.size() - 1));
  };
  auto py = [&](double v) { return top + plot_h * (1 - v / y_top); };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << width << " " << height
      << "\" width=\"" << width << "\" height=\"" << height << "\" role=\"img\">\n";
  svg << "<title>" << escaped(title) << "</title>\n";
  svg << "<text x=\"" << left << "\" y=\"20\" class=\"t\">" << escaped(title) << "</text>\n";
  for (double v = 0; v <= y_top * (1 + 1e-9); v += step) {
    svg << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << fixed(py(v), 1)
        << "\" y2=\"" << fixed(py(v), 1) << "\" class=\"g\"/>"
        << "<text x=\"" << left - 6 << "\" y=\"" << fixed(py(v) + 4, 1)
        << "\" text-anchor=\"end\" class=\"l\">" << short_number(v) << "</text>\n";
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    svg << "<text x=\"" << fixed(px(i), 1) << "\" y=\"" << top + plot_h + 18
        << "\" text-anchor=\"middle\" class=\"l\">" << escaped(x[i]) << "</text>\n";
  }
  svg << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << height - 10
      << "\" text-anchor=\"middle\" class=\"a\">" << escaped(x_label) << "</text>\n";
  svg << "<text transform=\"translate(16 " << top + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\" class=\"a\">" << escaped(y_label) << "</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    std::string path;
    for (std::size_t i = 0; i < s.y.size() && i < x.size(); ++i) {
      if (!s.y[i]) continue;
      path += (path.empty() ? "M" : " L") + fixed(px(i), 1) + " " + fixed(py(*s.y[i]), 1);
    }
    if (!path.empty()) {
      svg << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << s.colour
          << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    }
    // Error bars: the 80% interval, with caps.
    for (std::size_t i = 0; i < s.range.size() && i < x.size(); ++i) {
      if (!s.range[i]) continue;
      const std::string cx = fixed(px(i), 1);
      const std::string lo = fixed(py(s.range[i]->first), 1), hi = fixed(py(s.range[i]->second), 1);
      svg << "<path d=\"M" << cx << " " << lo << " L" << cx << " " << hi << " M" << fixed(px(i) - 4, 1)
          << " " << lo << " L" << fixed(px(i) + 4, 1) << " " << lo << " M" << fixed(px(i) - 4, 1) << " "
          << hi << " L" << fixed(px(i) + 4, 1) << " " << hi << "\" stroke=\"" << s.colour
          << "\" stroke-width=\"1\" fill=\"none\"><title>" << escaped(s.name) << ", 80%: "
          << short_number(s.range[i]->first) << " - " << short_number(s.range[i]->second)
          << "</title></path>\n";
    }
    for (std::size_t i = 0; i < s.y.size() && i < x.size(); ++i) {
      if (!s.y[i]) continue;
      svg << "<circle cx=\"" << fixed(px(i), 1) << "\" cy=\"" << fixed(py(*s.y[i]), 1)
          << "\" r=\"3\" fill=\"" << s.colour << "\"><title>" << escaped(s.name) << ": "
          << short_number(*s.y[i]) << "</title></circle>\n";
    }
    const double ly = top + 14 + 18 * static_cast<double>(k);
    svg << "<line x1=\"" << left + plot_w + 14 << "\" x2=\"" << left + plot_w + 34 << "\" y1=\""
        << ly - 4 << "\" y2=\"" << ly - 4 << "\" stroke=\"" << s.colour << "\" stroke-width=\"2\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/><text x=\"" << left + plot_w + 40
        << "\" y=\"" << ly << "\" class=\"l\">" << escaped(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

// A map of the task-level gain over two axes: a cell per pair, coloured by the gain (green
// where one job across islands beats the best island alone, red where it loses).
std::string gain_map(const std::string& row_label, const std::vector<std::string>& rows,
                     const std::string& column_label, const std::vector<std::string>& columns,
                     const std::map<std::pair<std::size_t, std::size_t>, double>& gain) {
  const double cell_w = std::max(48.0, 480.0 / static_cast<double>(std::max<std::size_t>(1, columns.size())));
  const double cell_h = 28, left = 120, top = 56;
  const double width = left + cell_w * static_cast<double>(columns.size()) + 20;
  const double height = top + cell_h * static_cast<double>(rows.size()) + 44;
  double extreme = 0.01;
  for (const auto& [cell, g] : gain) extreme = std::max(extreme, std::abs(g));
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << width << " " << height
      << "\" width=\"" << width << "\" height=\"" << height << "\" role=\"img\">\n";
  svg << "<title>Task-level mixing against the best island alone</title>\n";
  svg << "<text x=\"" << left << "\" y=\"20\" class=\"t\">Task-level mixing against the best "
         "island alone (tokens/s)</text>\n";
  svg << "<text x=\"" << left << "\" y=\"40\" class=\"a\">" << escaped(column_label) << "</text>\n";
  for (std::size_t c = 0; c < columns.size(); ++c) {
    svg << "<text x=\"" << fixed(left + cell_w * (static_cast<double>(c) + 0.5), 1) << "\" y=\""
        << top - 4 << "\" text-anchor=\"middle\" class=\"l\">" << escaped(columns[c]) << "</text>\n";
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = top + cell_h * static_cast<double>(r);
    svg << "<text x=\"" << left - 6 << "\" y=\"" << fixed(y + cell_h / 2 + 4, 1)
        << "\" text-anchor=\"end\" class=\"l\">" << escaped(rows[r]) << "</text>\n";
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double x = left + cell_w * static_cast<double>(c);
      const auto found = gain.find({r, c});
      std::string fill = "#eeeeee", label = "-";
      if (found != gain.end()) {
        const double t = std::min(1.0, std::abs(found->second) / extreme);
        const int shade = static_cast<int>(std::lround(235 - 140 * t));
        char colour[16];
        if (found->second >= 0) std::snprintf(colour, sizeof colour, "#%02x%02x%02x", shade, 235, shade);
        else std::snprintf(colour, sizeof colour, "#%02x%02x%02x", 235, shade, shade);
        fill = colour;
        label = (found->second >= 0 ? "+" : "") + fixed(100 * found->second, 1) + "%";
      }
      svg << "<rect x=\"" << fixed(x, 1) << "\" y=\"" << fixed(y, 1) << "\" width=\""
          << fixed(cell_w - 2, 1) << "\" height=\"" << cell_h - 2 << "\" fill=\"" << fill
          << "\"/><text x=\"" << fixed(x + cell_w / 2 - 1, 1) << "\" y=\"" << fixed(y + cell_h / 2 + 3, 1)
          << "\" text-anchor=\"middle\" class=\"l\">" << label << "</text>\n";
    }
  }
  svg << "<text transform=\"translate(14 " << fixed(top + cell_h * static_cast<double>(rows.size()) / 2, 1)
      << ") rotate(-90)\" text-anchor=\"middle\" class=\"a\">" << escaped(row_label) << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

// The distinct values of an axis in the order the points first use them.
std::vector<std::string> axis_values(const std::vector<PointResult>& points, const std::string& path) {
  std::vector<std::string> values;
  for (const auto& p : points) {
    const ordered_json& v_json = member(member(p.line, "values"), path.c_str());
    if (!v_json.is_string()) continue;
    const std::string v = v_json.get<std::string>();
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  return values;
}

std::string value_of(const PointResult& p, const std::string& path) {
  const ordered_json& v = member(member(p.line, "values"), path.c_str());
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace

std::vector<ReportChart> report_charts(const std::vector<std::string>& paths,
                                       const std::vector<PointResult>& points) {
  std::vector<ReportChart> charts;
  if (paths.empty() || points.empty()) return charts;
  // Islands, in the order the points name them.
  std::vector<std::string> islands;
  for (const auto& p : points) {
    if (!p.line.contains("single_island")) continue;
    for (const auto& entry : member(p.line, "single_island")) {
      const std::string name = text_at(entry, "island");
      if (std::find(islands.begin(), islands.end(), name) == islands.end()) islands.push_back(name);
    }
  }
  const std::string& first = paths.front();
  const std::vector<std::string> x = axis_values(points, first);
  // One line per value of the second axis when the points form a grid over the first two axes;
  // zipped or sampled axes (each first-axis value once) are drawn against the first alone.
  const bool grid = paths.size() >= 2 && points.size() > x.size();
  const std::vector<std::string> groups =
      grid ? axis_values(points, paths[1]) : std::vector<std::string>{""};
  auto lookup = [&](const std::string& xv, const std::string& gv) -> const PointResult* {
    for (const auto& p : points) {
      if (value_of(p, first) == xv && (!grid || value_of(p, paths[1]) == gv) && p.ok) return &p;
    }
    return nullptr;
  };

  // 1. The three states against the first axis (at the second axis's first value).
  {
    std::vector<Series> series;
    series.push_back({"one job, best", kPalette[0], {}, false});
    series.push_back({"task-level", kPalette[1], {}, true});
    series.push_back({"resource pool (sum)", kPalette[2], {}, true});
    for (std::size_t i = 0; i < islands.size(); ++i)
      series.push_back({islands[i] + " alone", kPalette[(3 + i) % 8], {}, false});
    for (const auto& xv : x) {
      const PointResult* p = lookup(xv, groups.front());
      series[0].y.push_back(p ? number_at(member(p->line, "best"), "tokens_per_s") : std::nullopt);
      series[0].range.push_back(p ? interval_at(member(p->line, "best"), "tokens_per_s")
                                  : std::nullopt);
      series[1].y.push_back(p ? number_at(member(p->line, "task_level"), "tokens_per_s") : std::nullopt);
      series[1].range.push_back(p ? interval_at(member(p->line, "task_level"), "tokens_per_s")
                                  : std::nullopt);
      series[2].y.push_back(p ? number_at(member(p->line, "resource_pool"), "tokens_per_s") : std::nullopt);
      for (std::size_t i = 0; i < islands.size(); ++i) {
        std::optional<double> alone;
        if (p) {
          for (const auto& entry : member(p->line, "single_island"))
            if (text_at(entry, "island") == islands[i] && entry.contains("best"))
              alone = number_at(member(entry, "best"), "tokens_per_s");
        }
        series[3 + i].y.push_back(alone);
      }
    }
    std::string title = "Tokens/s: the three states";
    if (grid) title += " (" + short_path(paths[1]) + " " + groups.front() + ")";
    charts.push_back({"states", line_chart(title, short_path(first), "tokens/s", x, series)});
  }
  // 2. The best job's tokens/s and goodput against the first axis, a line per second-axis value.
  {
    std::vector<Series> series;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string group = grid ? short_path(paths[1]) + " " + groups[g] : "";
      Series tokens{grid ? group : "tokens/s", kPalette[g % 8], {}, false};
      Series good{grid ? "goodput, " + group : "goodput", kPalette[g % 8], {}, true};
      bool any_goodput = false;
      for (const auto& xv : x) {
        const PointResult* p = lookup(xv, groups[g]);
        tokens.y.push_back(p ? number_at(member(p->line, "best"), "tokens_per_s") : std::nullopt);
        const auto gp = p ? number_at(member(p->line, "best"), "goodput_tokens_per_s") : std::nullopt;
        any_goodput |= gp.has_value();
        good.y.push_back(gp);
      }
      series.push_back(std::move(tokens));
      if (any_goodput && groups.size() <= 3) series.push_back(std::move(good));
    }
    charts.push_back({"best", line_chart("The best job: tokens/s and goodput", short_path(first),
                                         "tokens/s", x, series)});
  }
  // 3. Scaling: each island alone whose chip count changes, its tokens/s per chip as a share of
  // its first point's (100% is linear scaling).
  if (!grid) {
    std::vector<Series> series;
    for (std::size_t i = 0; i < islands.size(); ++i) {
      Series s{islands[i] + " alone", kPalette[(3 + i) % 8], {}, false};
      std::optional<double> base_per_chip, first_chips;
      bool varies = false;
      for (const auto& xv : x) {
        const PointResult* p = lookup(xv, groups.front());
        std::optional<double> share;
        if (p) {
          for (const auto& entry : member(p->line, "single_island")) {
            if (text_at(entry, "island") != islands[i]) continue;
            const auto chips = number_at(member(entry, "best"), "chips");
            const auto per_chip = number_at(member(entry, "best"), "tokens_per_s_per_chip");
            if (!chips || !per_chip || *per_chip <= 0) continue;
            if (!base_per_chip) {
              base_per_chip = per_chip;
              first_chips = chips;
            }
            varies |= *chips != *first_chips;
            share = 100 * *per_chip / *base_per_chip;
          }
        }
        s.y.push_back(share);
      }
      if (varies) series.push_back(std::move(s));
    }
    if (!series.empty()) {
      charts.push_back({"scaling", line_chart("Scaling: tokens/s per chip, % of the first point",
                                              short_path(first), "% (100 = linear)", x, series)});
    }
  }
  // 4. Where task-level mixing pays, over two axes of a grid.
  if (grid) {
    std::map<std::pair<std::size_t, std::size_t>, double> gain;
    const auto columns = axis_values(points, paths[1]);
    for (const auto& p : points) {
      if (!p.ok) continue;
      const auto g = number_at(p.line, "task_level_gain");
      if (!g) continue;
      const auto r = std::find(x.begin(), x.end(), value_of(p, first)) - x.begin();
      const auto c = std::find(columns.begin(), columns.end(), value_of(p, paths[1])) - columns.begin();
      gain[{static_cast<std::size_t>(r), static_cast<std::size_t>(c)}] = *g;
    }
    if (!gain.empty())
      charts.push_back({"gain", gain_map(short_path(first), x, short_path(paths[1]), columns, gain)});
  }
  // 5. Cost per million tokens, when the scenario has prices.
  {
    Series cost{"best job", kPalette[0], {}, false};
    bool any = false;
    for (const auto& xv : x) {
      const PointResult* p = lookup(xv, groups.front());
      const auto c = p ? number_at(member(p->line, "best"), "cost_per_million_tokens") : std::nullopt;
      any |= c.has_value();
      cost.y.push_back(c);
    }
    if (any)
      charts.push_back({"cost", line_chart("Cost per million tokens", short_path(first), "currency", x, {cost})});
  }
  return charts;
}

std::string report_html(const std::vector<std::string>& paths, const std::vector<PointResult>& points) {
  std::string name = points.empty() ? "sweep" : text_at(points.front().line, "sweep", "sweep");
  const std::size_t total =
      points.empty() ? 0 : static_cast<std::size_t>(number_at(points.front().line, "points").value_or(0));
  std::size_t failed = 0;
  for (const auto& p : points) failed += p.ok ? 0 : 1;
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Sweep "
       << escaped(name) << "</title>\n<style>\n"
       << "body{font-family:'DejaVu Sans','Noto Sans CJK SC','WenQuanYi Micro Hei',sans-serif;"
          "margin:24px;color:#222;max-width:1100px}\n"
       << "h1{font-size:22px}h2{font-size:17px;margin-top:28px}\n"
       << "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
          "text-align:right}th{background:#f3f3f3}td.s{text-align:left}\n"
       << "svg .t{font-size:15px;font-weight:bold}svg .l{font-size:11px}svg .a{font-size:12px}"
          "svg .g{stroke:#ddd}\n"
       << "</style>\n</head>\n<body>\n";
  html << "<h1>Sweep " << escaped(name) << "</h1>\n<p>" << points.size() << " of " << total
       << " points, " << failed << " failed. Axes: ";
  for (std::size_t i = 0; i < paths.size(); ++i) html << (i ? ", " : "") << "<code>" << escaped(paths[i]) << "</code>";
  html << ". Figures are the analytic estimator's (hetplan plan) for each point.</p>\n";
  for (const auto& chart : report_charts(paths, points)) html << "<figure>\n" << chart.svg << "</figure>\n";
  html << "<h2>Points</h2>\n<table>\n<tr><th>#</th>";
  for (const auto& path : paths) html << "<th>" << escaped(path) << "</th>";
  html << "<th>best job</th><th>tokens/s</th><th>80% interval</th><th>evidence</th><th>per chip</th><th>goodput</th>"
          "<th>task-level gain</th><th>status</th></tr>\n";
  for (const auto& p : points) {
    html << "<tr><td>" << p.index << "</td>";
    for (const auto& path : paths) html << "<td>" << escaped(value_of(p, path)) << "</td>";
    const ordered_json best = p.line.contains("best") ? member(p.line, "best") : ordered_json();
    auto cell = [&](std::optional<double> v, bool percent = false) {
      html << "<td>" << (v ? (percent ? (*v >= 0 ? "+" : "") + fixed(100 * *v, 1) + "%" : short_number(*v)) : "")
           << "</td>";
    };
    const ordered_json& plan = member(best, "plan");
    html << "<td class=\"s\">" << escaped(plan.is_string() ? plan.get<std::string>() : "") << "</td>";
    cell(number_at(best, "tokens_per_s"));
    // Its 80% interval and the evidence behind it.
    const auto interval = interval_at(best, "tokens_per_s");
    html << "<td>"
         << (interval ? short_number(interval->first) + " - " + short_number(interval->second) : "")
         << "</td><td class=\"s\">" << escaped(text_at(best, "evidence")) << "</td>";
    cell(number_at(best, "tokens_per_s_per_chip"));
    cell(number_at(best, "goodput_tokens_per_s"));
    cell(number_at(p.line, "task_level_gain"), true);
    html << "<td class=\"s\">" << escaped(p.ok ? "ok" : text_at(p.line, "error", "failed")) << "</td></tr>\n";
  }
  html << "</table>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace hetplan::sweep
