/* A small JSON reader, for load-gen --merge: it reads back the files
 * load-gen writes. The whole document becomes a tree of values; integers
 * keep all 64 bits (histogram counts must not pass through a double). */
#ifndef EX_JREAD_H
#define EX_JREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_kind;

typedef struct jv {
    jv_kind kind;
    bool b;            /* JV_BOOL */
    double num;        /* JV_NUM */
    bool is_uint;      /* JV_NUM written as a non-negative integer that fits */
    uint64_t u;        /* its exact value, when is_uint */
    char *str;         /* JV_STR, NUL-terminated (a NUL inside is refused) */
    size_t n;          /* JV_ARR, JV_OBJ: items */
    struct jv *items;
    char **keys;       /* JV_OBJ: keys[i] names items[i] */
} jv;

/* Reads and parses `path`. Returns the root (free with jv_free), or NULL
 * after writing why into err. */
jv *jv_parse_file(const char *path, char *err, size_t errlen);
void jv_free(jv *v);

/* The member `key` of an object, or NULL (also when `obj` is NULL or not an
 * object): lookups chain without checks in between. */
const jv *jv_get(const jv *obj, const char *key);
/* The value as an unsigned integer: false unless it is one. */
bool jv_uint(const jv *v, uint64_t *out);
/* The value as a number: false unless it is one. */
bool jv_num(const jv *v, double *out);

#endif
