/* Latency-by-percentile charts in the HdrHistogram style, as a
 * self-contained SVG: x is the percentile on a log "1 - p" scale (50%, 90%,
 * 99%, 99.9%, ...), y the latency in milliseconds, on a linear scale from 0
 * or a log scale from the decade below the fastest request (so a fast curve
 * next to a slow one keeps its shape instead of lying along the axis). The
 * y range is also written as data-* attributes of the axis group, and each
 * curve names its series in data-series, for programs that check a chart. */
#ifndef LG_PLOT_H
#define LG_PLOT_H

#include "histogram.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct plot_series {
    const char *label;
    const char *color;
    const char *dash;     /* SVG stroke-dasharray, or NULL for solid */
    const histogram *h;
} plot_series;

/* Writes the chart, the latency axis on a log scale when `log_y`, with
 * `settings` (what the run was: target, workers, rate, duration,
 * deadlines; NULL for none) in a line under the title, id "settings".
 * Returns 0, or -1 when there is nothing to plot. */
int plot_svg(FILE *f, const char *title, const char *settings, const plot_series *series, int n,
             bool log_y);

#endif
