/* Latency-by-percentile charts in the HdrHistogram style, as a
 * self-contained SVG: x is the percentile on a log "1 - p" scale (50%, 90%,
 * 99%, 99.9%, ...), y the latency. */
#ifndef LG_PLOT_H
#define LG_PLOT_H

#include "histogram.h"

#include <stdio.h>

typedef struct plot_series {
    const char *label;
    const char *color;
    const char *dash;     /* SVG stroke-dasharray, or NULL for solid */
    const histogram *h;
} plot_series;

/* Writes the chart. Returns 0, or -1 when there is nothing to plot. */
int plot_svg(FILE *f, const char *title, const plot_series *series, int n);

#endif
