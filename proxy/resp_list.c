/* RESP: the list commands (being written). */
#include "resp.h"

const resp_cmd resp_list_cmds[] = {
    {NULL, 0, NULL},
};
