#include "plot.h"

#include <math.h>
#include <stdint.h>

#define W 900
#define H 520
#define L 80   /* margins */
#define R 220
#define T 50
#define B 60
#define MAX_NINES 5.0 /* x axis reaches 99.999% */

static double x_of(double nines)
{
    return L + (W - L - R) * nines / MAX_NINES;
}

int plot_svg(FILE *f, const char *title, const plot_series *series, int n)
{
    uint64_t top = 0;
    for (int i = 0; i < n; i++) {
        uint64_t v = hist_quantile(series[i].h, 1.0 - pow(10, -MAX_NINES));
        if (series[i].h->count && v > top)
            top = v;
    }
    if (top == 0)
        return -1;
    /* A round y range: 1, 2 or 5 times a power of ten. */
    double span = 1;
    while (span < (double)top)
        span *= 10;
    if (span / 5 >= (double)top)
        span /= 5;
    else if (span / 2 >= (double)top)
        span /= 2;
    double plot_h = H - T - B;

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">%s</text>\n", L, title);
    /* Grid and axes. */
    for (int k = 0; k <= 5; k++) {
        double y = T + plot_h - plot_h * k / 5.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y,
                W - R, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 8, y + 4,
                span * k / 5.0);
    }
    static const char *const labels[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"};
    for (int k = 0; k <= (int)MAX_NINES; k++) {
        double x = x_of(k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, T, x,
                H - B);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, H - B + 20,
                labels[k]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">percentile (log scale of 1 - p)</text>\n",
            (L + W - R) / 2, H - 15);
    fprintf(f, "<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">"
               "latency (microseconds)</text>\n",
            T + (H - T - B) / 2, T + (H - T - B) / 2);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            L, T, W - L - R, H - T - B);

    /* One polyline per series, sampled finely along the log axis. */
    for (int i = 0; i < n; i++) {
        if (!series[i].h->count)
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
                series[i].color, series[i].dash ? " stroke-dasharray=\"" : "",
                series[i].dash ? series[i].dash : "", series[i].dash ? "\"" : "");
        for (int s = 0; s <= 200; s++) {
            double nines = MAX_NINES * s / 200.0;
            double p = 1.0 - pow(10, -nines);
            double v = (double)hist_quantile(series[i].h, p);
            double y = T + plot_h - plot_h * (v > span ? span : v) / span;
            fprintf(f, "%s%.1f,%.1f", s ? " " : "", x_of(nines), y);
        }
        fprintf(f, "\"/>\n");
        int ly = T + 10 + 24 * i;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n",
                W - R + 15, ly, W - R + 45, ly, series[i].color,
                series[i].dash ? " stroke-dasharray=\"" : "", series[i].dash ? series[i].dash : "",
                series[i].dash ? "\"" : "");
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", W - R + 52, ly + 4, series[i].label);
    }
    fprintf(f, "</svg>\n");
    return 0;
}
