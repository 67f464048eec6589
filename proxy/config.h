/* momento-proxy --config FILE: the options, and the listeners no command
 * line can express (several caches on several ports), from a YAML file
 * (docs/proxy.md, "Config file"). */
#ifndef PX_CONFIG_H
#define PX_CONFIG_H

#include "options.h"

/* Reads the YAML file PATH into `o` through px_option_set(), as if its
 * top-level keys were long options given before the command line (which
 * is parsed after it and so overrides it). `listeners:` entries are
 * appended to o->listeners; one that names no cache has cache NULL and
 * one given as a bare port has host NULL: --cache and --bind, whatever
 * their source, fill them in (px_options_finish).
 *
 * Every string the file sets is a copy owned here: it lives until
 * px_config_free(), so `o` may keep it as long as it runs.
 *
 * Returns 0, or 2 after printing "momento-proxy: PATH:LINE: KEY: why" on
 * stderr (a missing or unreadable file, a YAML syntax error, an unknown
 * key, a duplicate key, a list where a value goes, a bad value, an empty
 * `listeners:`, two listeners on one HOST:PORT). A file holding
 * `requirepass` that every user may read gets a warning on stderr; the
 * secret itself is never printed. */
int px_config_load(px_options *o, const char *path);

/* Frees every string px_config_load() set; the options that hold them must
 * not be used after it. */
void px_config_free(void);

#endif
