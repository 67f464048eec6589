#include "plot.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define W 900
#define H 520
#define L 80   /* margins */
#define R 220
#define T 50
#define B 60
#define MAX_NINES 5.0 /* x axis reaches 99.999% */
#define PLOT_H ((double)(H - T - B))
/* The settings line under the title: 11 px text, about 6 px a character,
 * wrapped to fit the picture's width from L; each further line moves the
 * plot down by SETTINGS_LEAD (the picture grows by as much). */
#define SETTINGS_CHARS 125
#define SETTINGS_LEAD 14
#define SETTINGS_MAX_LINES 8

static double x_of(double nines)
{
    return L + (W - L - R) * nines / MAX_NINES;
}

/* The latency axis: [lo, hi] ms, linear or log; `shift` px below where
 * the plot area starts without a wrapped settings line. */
typedef struct axis {
    bool log;
    double lo, hi;
    int shift;
} axis;

static double y_of(const axis *a, double ms)
{
    if (ms < a->lo)
        ms = a->lo;
    if (ms > a->hi)
        ms = a->hi;
    double frac = a->log ? (log10(ms) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                         : (ms - a->lo) / (a->hi - a->lo);
    return a->shift + T + PLOT_H - PLOT_H * frac;
}

/* Linear: 0 to a round top, 1, 2 or 5 times a power of ten, at or above the
 * slowest value. Log: whole decades from the one at or below the fastest
 * value to the one at or above the slowest, at least one decade. */
static axis make_axis(bool log_y, double fastest_ms, double slowest_ms)
{
    axis a = {log_y, 0, 0, 0};
    if (!log_y) {
        double span = 0.001;
        while (span < slowest_ms)
            span *= 10;
        if (span / 5 >= slowest_ms)
            span /= 5;
        else if (span / 2 >= slowest_ms)
            span /= 2;
        a.hi = span;
        return a;
    }
    /* A request measured as 0 us is drawn on the 1 us line: a log axis has
     * no 0, and 1 us is the histogram's resolution. */
    if (fastest_ms < 0.001)
        fastest_ms = 0.001;
    double lo_exp = floor(log10(fastest_ms) + 1e-9);
    double hi_exp = ceil(log10(slowest_ms) - 1e-9);
    if (hi_exp <= lo_exp)
        hi_exp = lo_exp + 1;
    a.lo = pow(10, lo_exp);
    a.hi = pow(10, hi_exp);
    return a;
}

static void grid_line(FILE *f, double y, const char *color)
{
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n", L, y, W - R, y,
            color);
}

static void y_label(FILE *f, double y, double ms)
{
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, y + 4, ms);
}

/* The first `n` bytes of `s` as SVG text: the XML specials escaped. */
static void put_text_n(FILE *f, const char *s, size_t n)
{
    for (; n && *s; s++, n--) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
}

static void put_text(FILE *f, const char *s)
{
    put_text_n(f, s, strlen(s));
}

/* Splits `s` into lines of at most SETTINGS_CHARS, after a "; " in the
 * line's second half if there is one, else at its last space (a word
 * longer than a line is cut); each line keeps the space it ends at, so the
 * lines joined are `s`. Stores each line's length; returns how many. */
static int wrap(const char *s, size_t *lens, int max_lines)
{
    int n = 0;
    size_t left = strlen(s);
    while (left && n < max_lines) {
        size_t len = left;
        if (left > SETTINGS_CHARS && n < max_lines - 1) {
            len = SETTINGS_CHARS;
            while (len > SETTINGS_CHARS / 2 && !(s[len - 1] == ' ' && s[len - 2] == ';'))
                len--;
            if (len == SETTINGS_CHARS / 2) {
                len = SETTINGS_CHARS;
                while (len > 0 && s[len - 1] != ' ')
                    len--;
            }
            if (len == 0)
                len = SETTINGS_CHARS;
        }
        lens[n++] = len;
        s += len;
        left -= len;
    }
    return n;
}

int plot_svg(FILE *f, const char *title, const char *settings, const plot_series *series, int n,
             bool log_y)
{
    uint64_t top = 0, bottom = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        if (!series[i].h->count)
            continue;
        uint64_t v = hist_quantile(series[i].h, 1.0 - pow(10, -MAX_NINES));
        if (v > top)
            top = v;
        if (series[i].h->min < bottom)
            bottom = series[i].h->min;
    }
    if (top == 0 && !log_y)
        return -1;
    if (bottom == UINT64_MAX)
        return -1;
    axis a = make_axis(log_y, (double)bottom / 1000.0, top ? (double)top / 1000.0 : 0.001);
    /* A settings line too long for the picture is wrapped, and the rest
     * moves down by the lines it added. */
    size_t lens[SETTINGS_MAX_LINES];
    int n_lines = settings ? wrap(settings, lens, SETTINGS_MAX_LINES) : 0;
    a.shift = n_lines > 1 ? SETTINGS_LEAD * (n_lines - 1) : 0;
    int t = T + a.shift, h = H + a.shift; /* the plot's top, the picture's height */

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n",
            W, h, W, h);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, h);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", L);
    put_text(f, title);
    fprintf(f, "</text>\n");
    if (settings) {
        /* Under the title, above the plot area; one tspan per line, so
         * the element's text is the settings whole. */
        fprintf(f, "<text id=\"settings\" x=\"%d\" y=\"46\" font-size=\"11\" fill=\"#555\">", L);
        const char *s = settings;
        for (int i = 0; i < n_lines; i++) {
            fprintf(f, "<tspan x=\"%d\" dy=\"%d\">", L, i ? SETTINGS_LEAD : 0);
            put_text_n(f, s, lens[i]);
            fprintf(f, "</tspan>");
            s += lens[i];
        }
        fprintf(f, "</text>\n");
    }
    /* The latency axis: its grid and labels, its range for programs. */
    fprintf(f, "<g id=\"latency-axis\" data-scale=\"%s\" data-min-ms=\"%g\" data-max-ms=\"%g\" "
               "data-top=\"%d\" data-bottom=\"%d\">\n",
            log_y ? "log" : "linear", a.lo, a.hi, t, h - B);
    if (log_y) {
        /* A line at 1, 2 and 5 of each decade; only the decades labelled. */
        for (double d = a.lo; d <= a.hi * 1.0001; d *= 10) {
            grid_line(f, y_of(&a, d), "#bbb");
            y_label(f, y_of(&a, d), d);
            for (int m = 2; m <= 5 && d * m < a.hi; m += 3)
                grid_line(f, y_of(&a, d * m), "#eee");
        }
    } else {
        for (int k = 0; k <= 5; k++) {
            double ms = a.hi * k / 5.0;
            grid_line(f, y_of(&a, ms), "#ddd");
            y_label(f, y_of(&a, ms), ms);
        }
    }
    fprintf(f, "</g>\n");
    static const char *const labels[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"};
    for (int k = 0; k <= (int)MAX_NINES; k++) {
        double x = x_of(k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, t, x,
                h - B);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, h - B + 20,
                labels[k]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">percentile (log scale of 1 - p)</text>\n",
            (L + W - R) / 2, h - 15);
    fprintf(f, "<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">"
               "latency (milliseconds%s)</text>\n",
            t + (H - T - B) / 2, t + (H - T - B) / 2, log_y ? ", log scale" : "");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            L, t, W - L - R, H - T - B);

    /* One polyline per series, sampled finely along the log axis. */
    for (int i = 0; i < n; i++) {
        if (!series[i].h->count)
            continue;
        fprintf(f, "<polyline data-series=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s "
                   "points=\"",
                series[i].label, series[i].color, series[i].dash ? " stroke-dasharray=\"" : "",
                series[i].dash ? series[i].dash : "", series[i].dash ? "\"" : "");
        for (int s = 0; s <= 200; s++) {
            double nines = MAX_NINES * s / 200.0;
            double p = 1.0 - pow(10, -nines);
            double ms = (double)hist_quantile(series[i].h, p) / 1000.0;
            fprintf(f, "%s%.1f,%.1f", s ? " " : "", x_of(nines), y_of(&a, ms));
        }
        fprintf(f, "\"/>\n");
        int ly = t + 10 + 24 * i;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n",
                W - R + 15, ly, W - R + 45, ly, series[i].color,
                series[i].dash ? " stroke-dasharray=\"" : "", series[i].dash ? series[i].dash : "",
                series[i].dash ? "\"" : "");
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", W - R + 52, ly + 4, series[i].label);
    }
    fprintf(f, "</svg>\n");
    return 0;
}
