/* The password check both protocols share (RESP AUTH / HELLO AUTH,
 * memcached's SASL PLAIN) against px_backend.requirepass. */
#ifndef PX_AUTH_H
#define PX_AUTH_H

#include "px.h"

#include <stdbool.h>
#include <string.h>

/* Whether `given` is the secret (1 to 512 bytes: options.c refuses an
 * empty one), in a time that depends on the given length alone: every
 * byte given is compared, against the secret's bytes taken round and round
 * without a branch, so no early exit tells how much of a guess was right
 * (Redis compares passwords in constant time too). */
static inline bool px_secret_equal(const char *secret, const px_str *given)
{
    size_t n = strlen(secret);
    unsigned diff = given->n != n;
    size_t j = 0;
    for (size_t i = 0; i < given->n; i++) {
        diff |= (unsigned char)given->p[i] ^ (unsigned char)secret[j];
        j++;
        j &= (size_t)0 - (size_t)(j < n); /* back to 0 past the secret's end */
    }
    return diff == 0;
}

#endif
