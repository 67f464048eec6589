/* The memcached side of the proxy: one port speaks both of memcached's
 * protocols, told apart by a connection's first byte as memcached does
 * (0x80: binary, anything else: text). */
#ifndef PX_MEMCACHE_H
#define PX_MEMCACHE_H

#include "conn.h"

extern const px_proto memcache_proto;

#endif
