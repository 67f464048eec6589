/* The little JSON the API key formats need (json.c). */
#ifndef MOMENTO_JSON_H
#define MOMENTO_JSON_H

#include <stddef.h>

/* Finds the string member `name` at the top level of the JSON object in
 * `json`. Returns 1 and an allocated, unescaped copy in *ret; 0 when the
 * member is absent or not a string; -1 when the text is not a JSON object
 * (or the member's string holds U+0000, which a C string cannot); -2 for no
 * memory. */
int momento__json_get_string(const char *json, size_t len, const char *name, char **ret);

#endif
