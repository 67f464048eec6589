/* RESP: the hash commands (being written). */
#include "resp.h"

const resp_cmd resp_hash_cmds[] = {
    {NULL, 0, NULL},
};
