/* Opening a listening TCP socket on the server's bind address
 * (srv_listen.h). */
#include "core/srv_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int srv_listen(const char *bind_to, int port, bool nonblock, int backlog, int *ret_port)
{
    bool v6 = strchr(bind_to, ':') != NULL;
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    if (v6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, bind_to, &in6->sin6_addr) != 1)
            return -1;
        sl = sizeof(*in6);
    } else {
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, bind_to, &in4->sin_addr) != 1)
            return -1;
        sl = sizeof(*in4);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, backlog) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        close(fd);
        return -1;
    }
    *ret_port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                         : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}
