// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_cm write() ABI of rdma_rs_ucm (/dev/infiniband/rdma_cm), driven
 * by hand as a hostile (or merely buggy) librdmacm would: ucma.sh
 * (selftests/rxe) runs one case per call,
 *
 *   ucma_user CASE /dev/infiniband/rdma_cm [ARGS]
 *
 * and checks what the kernel answers: errnos, handles, events, counts.
 * Exit status 0 if every check of the case held; otherwise the failed
 * check is printed. The structures are those of the system's uapi header
 * <rdma/rdma_user_cm.h>, which is what real users build against.
 *
 * The lifecycle steps (ucma_user lifecycle NODE NETNS_FILE STEP) run the
 * passive side in a child process moved to the namespace of NETNS_FILE
 * (setns), the active side in the caller's; every wait is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "../lib/check.h"

/*
 * The event numbers (enum rdma_cm_event_type: the kernel's
 * include/rdma/rdma_cm.h and librdmacm's <rdma/rdma_cma.h>, not in the
 * uapi header).
 */
enum {
	RDMA_CM_EVENT_ADDR_RESOLVED = 0,
	RDMA_CM_EVENT_ADDR_ERROR = 1,
	RDMA_CM_EVENT_ROUTE_RESOLVED = 2,
	RDMA_CM_EVENT_CONNECT_REQUEST = 4,
	RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
	RDMA_CM_EVENT_UNREACHABLE = 7,
	RDMA_CM_EVENT_REJECTED = 8,
	RDMA_CM_EVENT_ESTABLISHED = 9,
	RDMA_CM_EVENT_DISCONNECTED = 10,
	RDMA_CM_EVENT_MULTICAST_JOIN = 12,
};

/* What librdmacm's rdma_create_id(RDMA_PS_TCP) asks for: an RC id. */
#define QPT_RC 2
/* The least GET_EVENT response area (up to the reserved word). */
#define EVENT_MIN (sizeof(struct rdma_ucm_event_resp) - 12)
/* A handle no id has (handles count up from 0). */
#define MADE_UP 0xfffffff0u
/* The addresses of ucma.sh: ucx (rxec0) and ucy (rxec1). */
#define ADDR_X "10.79.5.1"
#define ADDR_Y "10.79.5.2"

static const char *node;

static int open_node(int flags)
{
	int fd = open(node, O_RDWR | O_CLOEXEC | flags);

	CHECK(fd >= 0, "open %s", node);
	return fd;
}

/* Writes one command: header, then the request of in bytes. */
static ssize_t ucmd(int fd, uint32_t cmd, const void *req, uint16_t in, uint16_t out)
{
	uint8_t buf[1024];
	struct rdma_ucm_cmd_hdr hdr = { .cmd = cmd, .in = in, .out = out };

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), req, in);
	return write(fd, buf, sizeof(hdr) + in);
}

/* A command whose request is the whole structure *req. */
#define CMD(fd, cmd, req, out) ucmd(fd, cmd, req, sizeof(*(req)), out)
#define OK(fd, cmd, req, out) (CMD(fd, cmd, req, out) == (ssize_t)(8 + sizeof(*(req))))

/* The errno of a command that failed (0 if it succeeded). */
#define ERRNO(call) ((call) < 0 ? errno : 0)

/* An id that cannot be found: ENOENT in the C ucma, EINVAL in ours. */
#define NO_ID(e) ((e) == EINVAL || (e) == ENOENT)

static int create_id_uid(int fd, uint64_t uid, uint32_t *h)
{
	struct rdma_ucm_create_id_resp resp = { .id = ~0u };
	struct rdma_ucm_create_id c = {
		.uid = uid, .response = (uintptr_t)&resp, .ps = RDMA_PS_TCP, .qp_type = QPT_RC,
	};

	if (!OK(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(resp)))
		return -1;
	*h = resp.id;
	return 0;
}

static uint32_t create_id(int fd, uint64_t uid)
{
	uint32_t h;

	CHECK(create_id_uid(fd, uid, &h) == 0, "CREATE_ID");
	return h;
}

/* DESTROY_ID; returns its events_reported, or -1 with errno. */
static int64_t destroy_id(int fd, uint32_t h)
{
	struct rdma_ucm_destroy_id_resp resp = { .events_reported = ~0u };
	struct rdma_ucm_destroy_id c = { .response = (uintptr_t)&resp, .id = h };

	if (!OK(fd, RDMA_USER_CM_CMD_DESTROY_ID, &c, sizeof(resp)))
		return -1;
	return resp.events_reported;
}

static void set_sin(struct sockaddr_in6 *slot, const char *ip, uint16_t port)
{
	struct sockaddr_in *a = (struct sockaddr_in *)slot;

	memset(slot, 0, sizeof(*slot));
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	CHECK(inet_pton(AF_INET, ip, &a->sin_addr) == 1, "address %s", ip);
}

static int bind_ip(int fd, uint32_t h, const char *ip, uint16_t port)
{
	struct rdma_ucm_bind_ip c = { .id = h };

	set_sin(&c.addr, ip, port);
	return OK(fd, RDMA_USER_CM_CMD_BIND_IP, &c, 0) ? 0 : -1;
}

static int resolve_ip(int fd, uint32_t h, const char *ip, uint16_t port)
{
	struct rdma_ucm_resolve_ip c = { .id = h, .timeout_ms = 2000 };

	set_sin(&c.dst_addr, ip, port);
	return OK(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &c, 0) ? 0 : -1;
}

static int resolve_route(int fd, uint32_t h)
{
	struct rdma_ucm_resolve_route c = { .id = h, .timeout_ms = 2000 };

	return OK(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &c, 0) ? 0 : -1;
}

static int listen_id(int fd, uint32_t h, uint32_t backlog)
{
	struct rdma_ucm_listen c = { .id = h, .backlog = backlog };

	return OK(fd, RDMA_USER_CM_CMD_LISTEN, &c, 0) ? 0 : -1;
}

static void conn_param(struct rdma_ucm_conn_param *p, uint32_t qpn)
{
	memset(p, 0, sizeof(*p));
	p->qp_num = qpn;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->valid = 1;
}

static int connect_id(int fd, uint32_t h, uint32_t qpn)
{
	struct rdma_ucm_connect c = { .id = h };

	conn_param(&c.conn_param, qpn);
	return OK(fd, RDMA_USER_CM_CMD_CONNECT, &c, 0) ? 0 : -1;
}

static int accept_id(int fd, uint32_t h, uint32_t qpn, uint64_t uid)
{
	struct rdma_ucm_accept c = { .uid = uid, .id = h };

	conn_param(&c.conn_param, qpn);
	return OK(fd, RDMA_USER_CM_CMD_ACCEPT, &c, 0) ? 0 : -1;
}

/* Whether fd is readable within ms (poll). */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	CHECK(n >= 0, "poll");
	return n == 1 && (p.revents & POLLIN);
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads one event within ms; -1 (errno ETIMEDOUT) if none came. */
static int get_event(int fd, struct rdma_ucm_event_resp *ev, int ms)
{
	struct rdma_ucm_get_event c = { .response = (uintptr_t)ev };

	if (!readable(fd, ms)) {
		errno = ETIMEDOUT;
		return -1;
	}
	memset(ev, 0xa5, sizeof(*ev));
	return OK(fd, RDMA_USER_CM_CMD_GET_EVENT, &c, sizeof(*ev)) ? 0 : -1;
}

/* Reads the next event: it must be of kind `event` for id h. */
static void expect_event(int fd, uint32_t h, uint32_t event, struct rdma_ucm_event_resp *ev,
			 const char *what)
{
	CHECK(get_event(fd, ev, 10000) == 0, "%s: no event", what);
	CHECK(ev->event == event && ev->id == h, "%s: event %u id %u status %d, not %u id %u",
	      what, ev->event, ev->id, (int32_t)ev->status, event, h);
}

/* An id whose address and route are resolved to ip:port (2 events read). */
static uint32_t routed_id(int fd, uint64_t uid, const char *ip, uint16_t port)
{
	struct rdma_ucm_event_resp ev;
	uint32_t h = create_id(fd, uid);

	CHECK(resolve_ip(fd, h, ip, port) == 0, "RESOLVE_IP %s", ip);
	expect_event(fd, h, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "resolve_ip");
	CHECK(ev.uid == uid && ev.status == 0, "ADDR_RESOLVED uid %llx status %d",
	      (unsigned long long)ev.uid, (int32_t)ev.status);
	CHECK(resolve_route(fd, h) == 0, "RESOLVE_ROUTE");
	expect_event(fd, h, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, "resolve_route");
	return h;
}

/* A listener on ip:port. */
static uint32_t listener(int fd, uint64_t uid, const char *ip, uint16_t port, uint32_t backlog)
{
	uint32_t h = create_id(fd, uid);

	CHECK(bind_ip(fd, h, ip, port) == 0, "BIND_IP %s:%u", ip, port);
	CHECK(listen_id(fd, h, backlog) == 0, "LISTEN");
	return h;
}

/*
 * Malformed framing, each refused with the C ucma's errno (or ours where
 * we are stricter), nothing made.
 */
static void case_framing(void)
{
	int fd = open_node(0);
	uint8_t buf[64] = { 0 };
	struct rdma_ucm_create_id_resp resp;
	struct rdma_ucm_create_id c = {
		.response = (uintptr_t)&resp, .ps = RDMA_PS_TCP, .qp_type = QPT_RC,
	};
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_get_event ge = { .response = (uintptr_t)&ev };
	struct rdma_ucm_cmd_hdr hdr = { .cmd = RDMA_USER_CM_CMD_CREATE_ID, .in = sizeof(c), .out = 4 };
	uint64_t arg[4] = { 0 };
	uint32_t a, b, h;

	/* Shorter than a header. */
	CHECK(ERRNO(write(fd, buf, 7)) == EINVAL, "7-byte write");
	/* `in` past the buffer written. */
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + 8, &c, sizeof(c));
	CHECK(ERRNO(write(fd, buf, 8 + sizeof(c) - 1)) == EINVAL, "in past the buffer");
	/* Commands without a handler (ENOSYS) and past the table (EINVAL). */
	static const uint32_t nosys[] = { 13, 19, 20, 21 };
	for (unsigned int i = 0; i < sizeof(nosys) / sizeof(nosys[0]); i++)
		CHECK(ERRNO(ucmd(fd, nosys[i], arg, sizeof(arg), 0)) == ENOSYS, "command %u",
		      nosys[i]);
	CHECK(ERRNO(ucmd(fd, 23, arg, sizeof(arg), 0)) == EINVAL, "command 23");
	CHECK(ERRNO(ucmd(fd, 1000, arg, sizeof(arg), 0)) == EINVAL, "command 1000");
	CHECK(ERRNO(ucmd(fd, 0x80000000u, arg, sizeof(arg), 0)) == EINVAL, "command 2^31");
	/* A request shorter than its structure. */
	CHECK(ERRNO(ucmd(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c) - 1, 4)) == EINVAL,
	      "short CREATE_ID");
	struct rdma_ucm_resolve_ip ri = { 0 };
	CHECK(ERRNO(ucmd(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &ri, sizeof(ri) - 4, 0)) == EINVAL,
	      "short RESOLVE_IP");
	CHECK(ERRNO(ucmd(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, 4, sizeof(ev))) == EINVAL,
	      "short GET_EVENT");
	/* A response area too small: before anything else (nothing queued,
	 * yet GET_EVENT on this blocking file answers at once). */
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, 3)) == ENOSPC, "CREATE_ID out 3");
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, EVENT_MIN - 1)) == ENOSPC,
	      "GET_EVENT out %zu", EVENT_MIN - 1);
	CHECK(EVENT_MIN == 324, "EVENT_MIN %zu", EVENT_MIN);
	struct rdma_ucm_destroy_id d = { .response = (uintptr_t)&resp, .id = MADE_UP };
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, 3)) == ENOSPC, "DESTROY_ID out 3");
	/* No ioctl ABI. */
	CHECK(ioctl(fd, 0xc0181b01, arg) < 0 && errno == ENOTTY, "ioctl not ENOTTY");
	CHECK(ioctl(fd, 0, NULL) < 0 && errno == ENOTTY, "ioctl 0 not ENOTTY");
	/*
	 * A response nothing is mapped at: EFAULT, and the id is gone: the
	 * handles around it (between two good ids) name nothing.
	 */
	a = create_id(fd, 1);
	c.response = 8;
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, 4)) == EFAULT, "bad response");
	b = create_id(fd, 2);
	CHECK(b != a, "same handle %u", a);
	for (h = a + 1; h <= a + 4; h++) {
		if (h == b)
			continue;
		CHECK(destroy_id(fd, h) < 0 && NO_ID(errno), "DESTROY_ID %u after EFAULT", h);
	}
	CHECK(destroy_id(fd, a) == 0 && destroy_id(fd, b) == 0, "DESTROY_ID");
	CHECK(!readable(fd, 0), "readable");
	close(fd);
}

/* Every command that names an id, on handle h of fd: its errno. */
static void every_command(int fd, uint32_t h, int other_fd, int (*ok)(int), const char *what)
{
	struct rdma_ucm_create_id_resp r4;
	uint8_t big[512];
	struct rdma_ucm_destroy_id d = { .response = (uintptr_t)&r4, .id = h };
	struct rdma_ucm_bind_ip bi = { .id = h };
	struct rdma_ucm_resolve_ip ri = { .id = h, .timeout_ms = 100 };
	struct rdma_ucm_resolve_route rr = { .id = h };
	struct rdma_ucm_query q = { .response = (uintptr_t)big, .id = h };
	struct rdma_ucm_connect co = { .id = h };
	struct rdma_ucm_listen l = { .id = h };
	struct rdma_ucm_accept ac = { .id = h };
	struct rdma_ucm_reject rj = { .id = h };
	struct rdma_ucm_disconnect dc = { .id = h };
	struct rdma_ucm_init_qp_attr ia = { .response = (uintptr_t)big, .id = h, .qp_state = 1 };
	int one = 1;
	struct rdma_ucm_set_option so = {
		.optval = (uintptr_t)&one, .id = h, .level = RDMA_OPTION_ID,
		.optname = RDMA_OPTION_ID_REUSEADDR, .optlen = sizeof(one),
	};
	struct rdma_ucm_notify no = { .id = h, .event = 3 };
	struct rdma_ucm_migrate_id mi = { .response = (uintptr_t)&r4, .id = h, .fd = fd };
	struct rdma_ucm_join_ip_mcast jm = { .response = (uintptr_t)&r4, .id = h };

	set_sin(&bi.addr, "0.0.0.0", 0);
	set_sin(&ri.dst_addr, ADDR_Y, 0);
	set_sin(&jm.addr, "239.7.7.7", 0);
	conn_param(&co.conn_param, 77);
	conn_param(&ac.conn_param, 77);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_BIND_IP, &bi, 0))), "%s: BIND_IP %d", what, errno);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &ri, 0))), "%s: RESOLVE_IP", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &rr, 0))), "%s: RESOLVE_ROUTE",
	      what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_QUERY_ROUTE, &q, sizeof(big)))),
	      "%s: QUERY_ROUTE", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_CONNECT, &co, 0))), "%s: CONNECT", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_LISTEN, &l, 0))), "%s: LISTEN", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_ACCEPT, &ac, 0))), "%s: ACCEPT", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_REJECT, &rj, 0))), "%s: REJECT", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_DISCONNECT, &dc, 0))), "%s: DISCONNECT", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, &ia, sizeof(big)))),
	      "%s: INIT_QP_ATTR", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_SET_OPTION, &so, 0))), "%s: SET_OPTION", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_NOTIFY, &no, 0))), "%s: NOTIFY", what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &jm, 4))), "%s: JOIN_IP_MCAST",
	      what);
	/* Moving it from this file to other_fd's. */
	CHECK(ok(ERRNO(CMD(other_fd, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4))), "%s: MIGRATE_ID",
	      what);
	CHECK(ok(ERRNO(CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, 4))), "%s: DESTROY_ID", what);
}

static int is_einval(int e)
{
	return e == EINVAL;
}

static int is_no_id(int e)
{
	return NO_ID(e);
}

static int is_enoent(int e)
{
	return e == ENOENT;
}

/*
 * Handles: another file's ids are EINVAL on every command that names one
 * (and are left alive), destroyed and made-up ones name nothing; DESTROY_ID
 * and MIGRATE_ID return the events read for the id.
 */
static void case_handles(void)
{
	int f1 = open_node(0), f2 = open_node(0), f3 = open_node(0);
	struct rdma_ucm_event_resp ev;
	uint32_t a = create_id(f1, 0x1111), b = create_id(f2, 0x2222), r;

	/* f1's id a, written to f2 (and migrated from f2 to f3). */
	every_command(f2, a, f3, is_einval, "foreign");
	/* Still alive on f1, and working: its events read and counted. */
	CHECK(resolve_ip(f1, a, ADDR_Y, 0) == 0, "RESOLVE_IP on the owner");
	expect_event(f1, a, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "owner");
	CHECK(ev.uid == 0x1111, "uid %llx", (unsigned long long)ev.uid);
	CHECK(resolve_route(f1, a) == 0, "RESOLVE_ROUTE");
	expect_event(f1, a, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, "owner route");
	/* f2 sees nothing of it. */
	CHECK(!readable(f2, 100), "f2 readable");
	/* A MIGRATE_ID from f1 naming f2's id b. */
	struct rdma_ucm_migrate_resp mr = { .events_reported = ~0u };
	struct rdma_ucm_migrate_id mi = { .response = (uintptr_t)&mr, .id = b, .fd = f1 };
	CHECK(ERRNO(CMD(f3, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4)) == EINVAL, "migrate foreign");
	CHECK(destroy_id(f1, a) == 2, "events_reported of a");
	/* Destroyed: every command fails, on the owner too. */
	every_command(f1, a, f3, is_no_id, "destroyed");
	every_command(f2, a, f3, is_no_id, "destroyed, other file");
	/* Made up. */
	every_command(f1, MADE_UP, f3, is_no_id, "made up");
	every_command(f1, 0x7fffffff, f3, is_no_id, "made up 2^31-1");
	every_command(f1, 0xffffffff, f3, is_no_id, "made up ~0");
	/* b was not touched by any of this. */
	r = b;
	CHECK(destroy_id(f2, r) == 0, "events_reported of b");
	CHECK(destroy_id(f2, r) < 0 && NO_ID(errno), "DESTROY_ID twice");
	CHECK(!readable(f1, 0) && !readable(f2, 0) && !readable(f3, 0), "readable");
	close(f1);
	close(f2);
	close(f3);
}

/*
 * What the C ucma answers where ours differs: an id that does not exist
 * (destroyed or made up) is ENOENT there, a MIGRATE_ID naming a descriptor
 * that is not open ENOENT.
 */
static void case_c_errnos(void)
{
	int f1 = open_node(0), f2 = open_node(0), gone, bad = 0;
	uint32_t a = create_id(f1, 1);
	struct rdma_ucm_migrate_resp mr;
	struct rdma_ucm_migrate_id mi = { .response = (uintptr_t)&mr, .id = a };
	pid_t pid;
	int st;

	CHECK(destroy_id(f1, a) == 0, "DESTROY_ID");
	/* Each in a child, so that every difference is printed. */
	for (int i = 0; i < 2; i++) {
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			if (i == 0)
				every_command(f1, MADE_UP, f2, is_enoent, "made up");
			else
				every_command(f1, a, f2, is_enoent, "destroyed");
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	a = create_id(f1, 1);
	gone = open_node(0);
	close(gone);
	mi.id = a;
	mi.fd = gone;
	if (ERRNO(CMD(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4)) != ENOENT) {
		printf("MIGRATE_ID from a closed fd: errno %d, the C ucma's ENOENT\n", errno);
		bad++;
	}
	CHECK(bad == 0, "%d differences from the C ucma", bad);
	close(f1);
	close(f2);
}

/* A UD id of the UDP port space (what rdma_create_id(RDMA_PS_UDP) asks). */
static uint32_t create_ud_id(int fd, uint64_t uid)
{
	struct rdma_ucm_create_id_resp resp = { .id = ~0u };
	struct rdma_ucm_create_id c = {
		.uid = uid, .response = (uintptr_t)&resp, .ps = RDMA_PS_UDP, .qp_type = 4,
	};

	CHECK(OK(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(resp)), "CREATE_ID (UDP)");
	return resp.id;
}

/* JOIN_IP_MCAST of group ip; the join's handle in *m, or -1 with errno. */
static int join_ip(int fd, uint32_t h, const char *ip, uint64_t uid, uint32_t *m)
{
	struct rdma_ucm_create_id_resp resp = { .id = ~0u };
	struct rdma_ucm_join_ip_mcast c = { .response = (uintptr_t)&resp, .uid = uid, .id = h };

	set_sin(&c.addr, ip, 0);
	if (!OK(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &c, sizeof(resp)))
		return -1;
	*m = resp.id;
	return 0;
}

/* JOIN_MCAST of an IPv4 group with flags and an addr_size. */
static int join_v4(int fd, uint32_t h, const char *ip, uint16_t flags, uint16_t size,
		   uint32_t *m)
{
	struct rdma_ucm_create_id_resp resp = { .id = ~0u };
	struct rdma_ucm_join_mcast c = {
		.response = (uintptr_t)&resp, .uid = 0x5e5e, .id = h, .addr_size = size,
		.join_flags = flags,
	};

	set_sin((struct sockaddr_in6 *)&c.addr, ip, 0);
	if (!OK(fd, RDMA_USER_CM_CMD_JOIN_MCAST, &c, sizeof(resp)))
		return -1;
	*m = resp.id;
	return 0;
}

/* LEAVE_MCAST; returns its events_reported, or -1 with errno. */
static int64_t leave(int fd, uint32_t m)
{
	struct rdma_ucm_destroy_id_resp resp = { .events_reported = ~0u };
	struct rdma_ucm_destroy_id c = { .response = (uintptr_t)&resp, .id = m };

	if (!OK(fd, RDMA_USER_CM_CMD_LEAVE_MCAST, &c, sizeof(resp)))
		return -1;
	return resp.events_reported;
}

/* Whether the host is a member of IPv4 group a.b.c.d (/proc/net/igmp). */
static int igmp_member(const char *ip)
{
	struct in_addr a;
	char want[16], line[256];
	FILE *f;
	int found = 0;

	CHECK(inet_pton(AF_INET, ip, &a) == 1, "group %s", ip);
	/* The group as the kernel prints it: the word in hex, host order. */
	snprintf(want, sizeof(want), "%08X", a.s_addr);
	f = fopen("/proc/net/igmp", "r");
	CHECK(f, "/proc/net/igmp");
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			found = 1;
	fclose(f);
	return found;
}

/* Waits (2 s at most) for the host's membership of ip to become want. */
static void expect_member(const char *ip, int want, const char *what)
{
	for (int i = 0; i < 200 && igmp_member(ip) != want; i++)
		usleep(10000);
	CHECK(igmp_member(ip) == want, "%s: member of %s: %d, want %d", what, ip,
	      igmp_member(ip), want);
}

/*
 * Multicast of UD ids (JOIN_IP_MCAST, JOIN_MCAST, LEAVE_MCAST), in ucx:
 * what a join needs (a UD id with an address), the join's event and its
 * UD parameters as librdmacm reads them (uid and handle of the join, the
 * group's GID, QPN 0xFFFFFF, the UDP port space's Q_Key, the source GID's
 * index), the host's IP membership following full joins only, the events
 * reported by LEAVE_MCAST (unread ones dropped), foreign, stale and
 * made-up joins, and joins ended by DESTROY_ID and by close.
 */
static void case_mcast(void)
{
	int fd = open_node(O_NONBLOCK), f2 = open_node(0), e;
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_ud_param *ud = (struct rdma_ucm_ud_param *)&ev.param;
	struct ib_uverbs_qp_attr qa;
	struct rdma_ucm_init_qp_attr ia = { .response = (uintptr_t)&qa, .qp_state = 1 };
	uint8_t want_gid[16] = { [10] = 0xff, [11] = 0xff, 239, 7, 7, 1 };
	uint32_t u, rc, m1, m2, m3, m4, m;
	char path[128], gid[64];
	FILE *f;

	u = create_ud_id(fd, 0x55);
	/* No address yet: no device, EINVAL. */
	CHECK(ERRNO(join_ip(fd, u, "239.7.7.1", 1, &m)) == EINVAL, "join without an address");
	ia.id = u;
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, &ia, sizeof(qa))) == EINVAL,
	      "INIT_QP_ATTR without an address");
	/* An RC id cannot join. */
	rc = create_id(fd, 0x66);
	CHECK(bind_ip(fd, rc, ADDR_X, 0) == 0, "BIND_IP (RC)");
	CHECK(ERRNO(join_ip(fd, rc, "239.7.7.1", 1, &m)) == EINVAL, "an RC id joins");
	CHECK(destroy_id(fd, rc) == 0, "DESTROY_ID (RC)");
	/* A UD id of the UDP port space: the QP's INIT, with the Q_Key. */
	CHECK(bind_ip(fd, u, ADDR_X, 0) == 0, "BIND_IP (UD)");
	memset(&qa, 0xa5, sizeof(qa));
	CHECK(OK(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, &ia, sizeof(qa)), "INIT_QP_ATTR (UD)");
	CHECK(qa.qp_attr_mask == (1 | 16 | 32 | 64) /* STATE PKEY_INDEX PORT QKEY */ &&
	      qa.qkey == 0x01234567 && qa.port_num == 1 && qa.pkey_index == 0 && qa.qp_state == 1,
	      "UD INIT: mask %x qkey %x port %u pkey %u state %u", qa.qp_attr_mask, qa.qkey,
	      qa.port_num, qa.pkey_index, qa.qp_state);
	/* What the C ucma refuses: bad flags, an address size not its family's. */
	CHECK(ERRNO(join_v4(fd, u, "239.7.7.1", 2, 16, &m)) == EINVAL, "join flags 2");
	CHECK(ERRNO(join_v4(fd, u, "239.7.7.1", 0, 28, &m)) == EINVAL, "addr_size 28 for IPv4");
	/* Ours: a unicast "group"; an IPv6 group (no RoCE v2 mapping; C: ENOTSUPP). */
	CHECK(ERRNO(join_ip(fd, u, "10.79.5.9", 1, &m)) == EINVAL, "a unicast group");
	{
		struct rdma_ucm_create_id_resp resp;
		struct rdma_ucm_join_ip_mcast c = { .response = (uintptr_t)&resp, .id = u };
		struct sockaddr_in6 *a6 = &c.addr;

		a6->sin6_family = AF_INET6;
		CHECK(inet_pton(AF_INET6, "ff0e::1234", &a6->sin6_addr) == 1, "ff0e::1234");
		e = ERRNO(OK(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, &c, sizeof(resp)) ? 0 : -1);
		CHECK(e == EOPNOTSUPP || e == 524, "an IPv6 group: errno %d", e);
	}
	CHECK(!readable(fd, 100), "an event after refused joins");

	/* A full join: its event, and the host is a member of the group. */
	CHECK(join_ip(fd, u, "239.7.7.1", 0xabc, &m1) == 0, "JOIN_IP_MCAST");
	expect_event(fd, m1, RDMA_CM_EVENT_MULTICAST_JOIN, &ev, "join");
	CHECK(ev.uid == 0xabc && ev.status == 0, "join: uid %llx status %d",
	      (unsigned long long)ev.uid, (int32_t)ev.status);
	CHECK(ud->qp_num == 0xffffff && ud->qkey == 0x01234567 && ud->ah_attr.is_global == 1 &&
	      ud->ah_attr.port_num == 1 && ud->ah_attr.grh.hop_limit == 64 &&
	      !memcmp(ud->ah_attr.grh.dgid, want_gid, 16) && ud->private_data_len == 0,
	      "join: qpn %x qkey %x global %u port %u hop %u", ud->qp_num, ud->qkey,
	      ud->ah_attr.is_global, ud->ah_attr.port_num, ud->ah_attr.grh.hop_limit);
	/* The source GID index names our address's GID. */
	snprintf(path, sizeof(path), "/sys/class/infiniband/rxec0/ports/1/gids/%u",
		 ud->ah_attr.grh.sgid_index);
	f = fopen(path, "r");
	CHECK(f && fgets(gid, sizeof(gid), f), "%s", path);
	fclose(f);
	CHECK(!strncmp(gid, "0000:0000:0000:0000:0000:ffff:0a4f:0501", 39), "sgid %u is %s",
	      ud->ah_attr.grh.sgid_index, gid);
	expect_member("239.7.7.1", 1, "full join");

	/* A send-only join (JOIN_MCAST): its event, no membership. */
	CHECK(join_v4(fd, u, "239.7.7.2", 1, 16, &m2) == 0, "JOIN_MCAST send-only");
	expect_event(fd, m2, RDMA_CM_EVENT_MULTICAST_JOIN, &ev, "send-only join");
	CHECK(ev.uid == 0x5e5e, "send-only join: uid %llx", (unsigned long long)ev.uid);
	expect_member("239.7.7.2", 0, "send-only join");

	/* LEAVE_MCAST: the events read (1), membership gone. */
	CHECK(leave(fd, m1) == 1, "LEAVE_MCAST: events_reported");
	expect_member("239.7.7.1", 0, "left");
	/* An event never read: dropped, 0 reported. */
	CHECK(join_ip(fd, u, "239.7.7.3", 3, &m3) == 0, "JOIN (unread)");
	CHECK(readable(fd, 5000), "no event of the third join");
	CHECK(leave(fd, m3) == 0, "LEAVE_MCAST of an unread join");
	CHECK(!readable(fd, 200), "the unread join's event left queued");
	/* Left, made up, another file's. */
	CHECK(ERRNO(leave(fd, m1)) == ENOENT, "LEAVE_MCAST twice");
	CHECK(ERRNO(leave(fd, MADE_UP)) == ENOENT, "LEAVE_MCAST of a made-up join");
	CHECK(ERRNO(leave(f2, m2)) == EINVAL, "LEAVE_MCAST of another file's join");
	CHECK(ERRNO(join_ip(f2, u, "239.7.7.9", 9, &m)) == EINVAL, "JOIN on another file's id");

	/* DESTROY_ID with joins alive: they end (3 events of the id read). */
	CHECK(join_ip(fd, u, "239.7.7.4", 4, &m4) == 0, "JOIN (to destroy)");
	expect_event(fd, m4, RDMA_CM_EVENT_MULTICAST_JOIN, &ev, "fourth join");
	expect_member("239.7.7.4", 1, "fourth join");
	CHECK(destroy_id(fd, u) == 3, "DESTROY_ID: events_reported");
	expect_member("239.7.7.4", 0, "destroyed");
	CHECK(ERRNO(leave(fd, m2)) == ENOENT, "LEAVE_MCAST after DESTROY_ID");

	/* The file closed with a join and its event unread. */
	u = create_ud_id(f2, 0x77);
	CHECK(bind_ip(f2, u, ADDR_X, 0) == 0, "BIND_IP");
	CHECK(join_ip(f2, u, "239.7.7.5", 5, &m) == 0, "JOIN (to close)");
	expect_member("239.7.7.5", 1, "fifth join");
	close(f2);
	expect_member("239.7.7.5", 0, "closed");
	close(fd);
}

/*
 * Events: EAGAIN and poll on an empty non-blocking file, readable once an
 * event waits; ADDR_RESOLVED and ADDR_ERROR; GET_EVENT into a bad buffer
 * leaves the event queued; MIGRATE_ID with its events. In ucx.
 */
static void case_events(void)
{
	int fd = open_node(O_NONBLOCK), f2 = open_node(0), devnull, gone;
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_get_event ge = { .response = (uintptr_t)&ev };
	uint32_t a, b;

	CHECK(ERRNO(OK(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, sizeof(ev)) ? 0 : -1) == EAGAIN,
	      "GET_EVENT on an empty non-blocking file");
	CHECK(!readable(fd, 0), "empty file readable");
	/* The peer's address: ADDR_RESOLVED, poll says so. */
	a = create_id(fd, 0xaaaa);
	CHECK(resolve_ip(fd, a, ADDR_Y, 0) == 0, "RESOLVE_IP");
	CHECK(readable(fd, 5000), "no event within 5 s");
	/* Into a buffer nothing is mapped at: EFAULT, still queued. */
	ge.response = 16;
	CHECK(ERRNO(OK(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, sizeof(ev)) ? 0 : -1) == EFAULT,
	      "GET_EVENT into nothing");
	ge.response = (uintptr_t)&ev;
	CHECK(readable(fd, 0), "event gone after EFAULT");
	/* The least response area takes it (what fits is written). */
	memset(&ev, 0xa5, sizeof(ev));
	CHECK(OK(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, EVENT_MIN), "GET_EVENT of %zu", EVENT_MIN);
	CHECK(ev.event == RDMA_CM_EVENT_ADDR_RESOLVED && ev.id == a && ev.uid == 0xaaaa &&
	      ev.status == 0, "event %u id %u status %d", ev.event, ev.id, (int32_t)ev.status);
	CHECK(ev.reserved == 0xa5a5a5a5, "written past the response area");
	CHECK(!readable(fd, 0), "readable after the only event");
	CHECK(ERRNO(OK(fd, RDMA_USER_CM_CMD_GET_EVENT, &ge, sizeof(ev)) ? 0 : -1) == EAGAIN,
	      "EAGAIN after the only event");
	/* No route to it: ADDR_ERROR with a negative errno. */
	b = create_id(fd, 0xbbbb);
	CHECK(resolve_ip(fd, b, "10.200.0.1", 0) == 0, "RESOLVE_IP without a route");
	expect_event(fd, b, RDMA_CM_EVENT_ADDR_ERROR, &ev, "no route");
	CHECK((int32_t)ev.status < 0, "ADDR_ERROR status %d", (int32_t)ev.status);
	printf("ADDR_ERROR status %d\n", (int32_t)ev.status);
	CHECK(destroy_id(fd, b) == 1, "events_reported of b");
	/* a's route: ROUTE_RESOLVED waits; MIGRATE_ID takes it to f2. */
	CHECK(resolve_route(fd, a) == 0, "RESOLVE_ROUTE");
	CHECK(readable(fd, 5000), "no route event");
	struct rdma_ucm_migrate_resp mr = { .events_reported = ~0u };
	struct rdma_ucm_migrate_id mi = { .response = (uintptr_t)&mr, .id = a, .fd = fd };
	/* A file of another of our character devices (uverbs); a
	 * descriptor not open. */
	for (int i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "/dev/infiniband/uverbs%d", i);
		devnull = open(name, O_RDWR | O_CLOEXEC);
		if (devnull < 0)
			continue;
		mi.fd = devnull;
		CHECK(ERRNO(CMD(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4)) == EINVAL,
		      "MIGRATE_ID from %s", name);
		close(devnull);
		break;
	}
	gone = open("/dev/null", O_RDWR);
	close(gone);
	mi.fd = gone;
	CHECK(ERRNO(CMD(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4)) == EBADF ||
	      errno == ENOENT, "MIGRATE_ID from a closed fd");
	mi.fd = fd;
	CHECK(ERRNO(CMD(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 3)) == ENOSPC, "MIGRATE_ID out 3");
	CHECK(OK(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4), "MIGRATE_ID");
	CHECK(mr.events_reported == 1, "migrate events_reported %u", mr.events_reported);
	/* The event is on f2 now, none on fd; the id answers on f2 only. */
	CHECK(!readable(fd, 100), "old file still readable");
	expect_event(f2, a, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, "migrated");
	CHECK(ev.uid == 0xaaaa, "uid %llx", (unsigned long long)ev.uid);
	CHECK(destroy_id(fd, a) < 0 && errno == EINVAL, "DESTROY_ID on the old file");
	/* Migrating to the file it is on: nothing moves. */
	mi.fd = f2;
	CHECK(OK(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4) && mr.events_reported == 2,
	      "MIGRATE_ID to its own file: %u", mr.events_reported);
	CHECK(destroy_id(f2, a) == 2, "events_reported after migration");
	CHECK(!readable(fd, 0) && !readable(f2, 0), "readable at the end");
	/* Not a file of ours at all: EINVAL, as for any file not rdma_cm's. */
	a = create_id(fd, 0xcccc);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(devnull >= 0, "/dev/null");
	mi.id = a;
	mi.fd = devnull;
	CHECK(ERRNO(CMD(f2, RDMA_USER_CM_CMD_MIGRATE_ID, &mi, 4)) == EINVAL,
	      "MIGRATE_ID from /dev/null");
	CHECK(destroy_id(fd, a) == 0, "DESTROY_ID");
	close(devnull);
	close(fd);
	close(f2);
}

/*
 * Lifecycle: the passive side in a child in namespace file ns_y, the
 * active one here (the caller's namespace). The child tells its progress
 * through a pipe; every wait is bounded.
 */
static const char *ns_y;

struct peer {
	pid_t pid;
	int to_child;	/* write end */
	int from_child;	/* read end */
};

static void send_byte(int fd, char c)
{
	CHECK(write(fd, &c, 1) == 1, "pipe write");
}

static void wait_byte(int fd, char want, int ms, const char *what)
{
	char c = 0;

	CHECK(readable(fd, ms), "%s: peer silent for %d ms", what, ms);
	CHECK(read(fd, &c, 1) == 1 && c == want, "%s: peer said %c", what, c);
}

/* Forks the passive side, run(to_parent, from_parent) in namespace ns_y. */
static void peer_start(struct peer *p, void (*run)(int, int))
{
	int down[2], up[2];

	CHECK(pipe(down) == 0 && pipe(up) == 0, "pipe");
	p->pid = fork();
	CHECK(p->pid >= 0, "fork");
	if (p->pid == 0) {
		int ns = open(ns_y, O_RDONLY | O_CLOEXEC);

		close(down[1]);
		close(up[0]);
		CHECK(ns >= 0 && setns(ns, CLONE_NEWNET) == 0, "setns %s", ns_y);
		close(ns);
		alarm(60);
		run(up[1], down[0]);
		exit(0);
	}
	close(down[0]);
	close(up[1]);
	p->to_child = down[1];
	p->from_child = up[0];
}

/* Waits for the passive side's end (30 s at most): it must exit 0. */
static void peer_end(struct peer *p)
{
	int st;

	for (int i = 0; i < 300; i++) {
		pid_t w = waitpid(p->pid, &st, WNOHANG);

		CHECK(w >= 0, "waitpid");
		if (w == p->pid) {
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "passive side failed (%x)", st);
			close(p->to_child);
			close(p->from_child);
			return;
		}
		usleep(100000);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	CHECK(0, "passive side still running after 30 s");
}

/* Destroyed with its ADDR_RESOLVED unread: the event goes with it. */
static void lc_addr(void)
{
	int fd = open_node(0);
	uint32_t h = create_id(fd, 1);

	CHECK(resolve_ip(fd, h, ADDR_Y, 7601) == 0, "RESOLVE_IP");
	CHECK(destroy_id(fd, h) == 0, "DESTROY_ID during address resolution");
	CHECK(!readable(fd, 200), "an event of a destroyed id");
	close(fd);
}

/* Destroyed with its ROUTE_RESOLVED unread. */
static void lc_route(void)
{
	int fd = open_node(0);
	struct rdma_ucm_event_resp ev;
	uint32_t h = create_id(fd, 1);

	CHECK(resolve_ip(fd, h, ADDR_Y, 7602) == 0, "RESOLVE_IP");
	expect_event(fd, h, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "addr");
	CHECK(resolve_route(fd, h) == 0, "RESOLVE_ROUTE");
	CHECK(destroy_id(fd, h) == 1, "DESTROY_ID during route resolution");
	CHECK(!readable(fd, 200), "an event of a destroyed id");
	close(fd);
}

/* Passive side of lc_connect: the request, then its REJ. */
static void lc_connect_passive(int up, int down)
{
	int fd = open_node(0);
	struct rdma_ucm_event_resp ev;
	uint32_t l = listener(fd, 0x1e, ADDR_Y, 7603, 0), c;

	send_byte(up, 'L');
	CHECK(get_event(fd, &ev, 10000) == 0, "no CONNECT_REQUEST");
	CHECK(ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && ev.uid == 0x1e && ev.id != l,
	      "event %u id %u", ev.event, ev.id);
	c = ev.id;
	CHECK(ev.param.conn.qp_num == 0x603, "REQ's qp_num %x", ev.param.conn.qp_num);
	expect_event(fd, c, RDMA_CM_EVENT_REJECTED, &ev, "request's id");
	printf("passive: REJECTED status %d\n", (int32_t)ev.status);
	CHECK(destroy_id(fd, c) == 1, "events_reported of the request's id");
	CHECK(destroy_id(fd, l) == 1, "events_reported of the listener");
	close(fd);
	(void)down;
}

/*
 * SIDR (UD ids' CONNECT, LISTEN, ACCEPT, REJECT), the passive side in ucy:
 * listeners on ADDR_Y, UD on 7611 (first request accepted, second
 * rejected, third never read and its listener destroyed) and 7613, RC on
 * 7612; nobody on 7614.
 */
static void sidr_passive(int up, int down)
{
	int fd = open_node(0);
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_ud_param *ud = (struct rdma_ucm_ud_param *)&ev.param;
	struct rdma_ucm_accept ac = { .uid = 0x611 };
	struct rdma_ucm_reject rj = { .reason = 28 };
	uint32_t l1 = create_ud_id(fd, 0x11), l2, l3 = create_ud_id(fd, 0x13), c;

	CHECK(bind_ip(fd, l1, ADDR_Y, 7611) == 0 && listen_id(fd, l1, 0) == 0, "UD listener");
	l2 = listener(fd, 0x12, ADDR_Y, 7612, 0);
	CHECK(bind_ip(fd, l3, ADDR_Y, 7613) == 0 && listen_id(fd, l3, 0) == 0, "UD listener 2");
	send_byte(up, 'L');
	/* The first request: its private data after the rdma_cm header. */
	CHECK(get_event(fd, &ev, 10000) == 0, "no CONNECT_REQUEST");
	CHECK(ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && ev.uid == 0x11 && ev.id != l1,
	      "event %u uid %llx", ev.event, (unsigned long long)ev.uid);
	CHECK(ud->private_data_len == 180 && !memcmp(ud->private_data, "sidr-req", 9),
	      "request's private data: %u bytes", ud->private_data_len);
	c = ev.id;
	ac.id = c;
	conn_param(&ac.conn_param, 0x611);
	/* More private data than a SIDR REP has room for. */
	ac.conn_param.private_data_len = 137;
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_ACCEPT, &ac, 0)) == EINVAL, "137 bytes accepted");
	ac.conn_param.private_data_len = 9;
	memcpy(ac.conn_param.private_data, "sidr-rep", 9);
	CHECK(OK(fd, RDMA_USER_CM_CMD_ACCEPT, &ac, 0), "ACCEPT (UD)");
	CHECK(ERRNO(CMD(fd, RDMA_USER_CM_CMD_ACCEPT, &ac, 0)) == EINVAL, "ACCEPT twice");
	/* The second: rejected, with private data. */
	CHECK(get_event(fd, &ev, 10000) == 0 && ev.event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "no second CONNECT_REQUEST");
	rj.id = ev.id;
	rj.private_data_len = 3;
	memcpy(rj.private_data, "no", 3);
	CHECK(OK(fd, RDMA_USER_CM_CMD_REJECT, &rj, 0), "REJECT (UD)");
	/* The third: never read; its listener destroyed once it is queued. */
	wait_byte(down, '3', 20000, "third request sent");
	CHECK(readable(fd, 10000), "no third request");
	CHECK(destroy_id(fd, l1) == 2, "events_reported of the UD listener");
	send_byte(up, 'D');
	wait_byte(down, 'E', 30000, "the end");
	CHECK(destroy_id(fd, l2) == 0 && destroy_id(fd, l3) == 0, "other listeners");
	close(fd);
}

/* A UD id of ucx routed to ADDR_Y:port, CONNECTed with private data. */
static uint32_t sidr_connect(int fd, uint64_t uid, uint16_t port)
{
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_connect co = { 0 };
	uint32_t h = create_ud_id(fd, uid);

	CHECK(resolve_ip(fd, h, ADDR_Y, port) == 0, "RESOLVE_IP");
	expect_event(fd, h, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "resolve_ip (UD)");
	CHECK(resolve_route(fd, h) == 0, "RESOLVE_ROUTE");
	expect_event(fd, h, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, "resolve_route (UD)");
	co.id = h;
	conn_param(&co.conn_param, 0x7ff);
	co.conn_param.private_data_len = 9;
	memcpy(co.conn_param.private_data, "sidr-req", 9);
	CHECK(OK(fd, RDMA_USER_CM_CMD_CONNECT, &co, 0), "CONNECT (UD) to %u", port);
	return h;
}

static void case_sidr(void)
{
	struct peer p;
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_ud_param *ud = (struct rdma_ucm_ud_param *)&ev.param;
	uint8_t want_gid[16] = { [10] = 0xff, [11] = 0xff, 10, 79, 5, 2 };
	int fd;
	uint32_t h;

	peer_start(&p, sidr_passive);
	fd = open_node(0);
	wait_byte(p.from_child, 'L', 10000, "listen");
	/* Accepted: the service's QPN and Q_Key, its address, the REP's data. */
	h = sidr_connect(fd, 1, 7611);
	expect_event(fd, h, RDMA_CM_EVENT_ESTABLISHED, &ev, "SIDR accepted");
	CHECK(ev.status == 0 && ud->qp_num == 0x611 && ud->qkey == 0x01234567 &&
	      ud->ah_attr.is_global == 1 && !memcmp(ud->ah_attr.grh.dgid, want_gid, 16) &&
	      ud->private_data_len == 136 && !memcmp(ud->private_data, "sidr-rep", 9),
	      "ESTABLISHED: qpn %x qkey %x data %u", ud->qp_num, ud->qkey, ud->private_data_len);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (UD)");
	/* Rejected: UNREACHABLE, status REJECT (2), the REP's data. */
	h = sidr_connect(fd, 2, 7611);
	expect_event(fd, h, RDMA_CM_EVENT_UNREACHABLE, &ev, "SIDR rejected");
	CHECK(ev.status == 2 && !memcmp(ud->private_data, "no", 3), "rejected: status %d",
	      (int32_t)ev.status);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (rejected)");
	/* Unread, its listener destroyed: REJECT. */
	h = sidr_connect(fd, 3, 7611);
	send_byte(p.to_child, '3');
	wait_byte(p.from_child, 'D', 20000, "listener destroyed");
	expect_event(fd, h, RDMA_CM_EVENT_UNREACHABLE, &ev, "SIDR unread");
	CHECK(ev.status == 2, "unread: status %d", (int32_t)ev.status);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (unread)");
	/*
	 * An RC listener's port: its service ID is the TCP port space's, not
	 * the UDP one the SIDR REQ asks for, so nobody provides that service:
	 * UNSUPPORTED (1), as from the C rdma_cm.
	 */
	h = sidr_connect(fd, 4, 7612);
	expect_event(fd, h, RDMA_CM_EVENT_UNREACHABLE, &ev, "SIDR to an RC listener");
	CHECK(ev.status == 1, "RC listener: status %d", (int32_t)ev.status);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (RC listener)");
	/* Nobody listens: UNSUPPORTED (1). */
	h = sidr_connect(fd, 5, 7614);
	expect_event(fd, h, RDMA_CM_EVENT_UNREACHABLE, &ev, "SIDR to nobody");
	CHECK(ev.status == 1, "nobody: status %d", (int32_t)ev.status);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (nobody)");
	/* An RC id's REQ to a UD listener: rejected. */
	h = routed_id(fd, 6, ADDR_Y, 7613);
	CHECK(connect_id(fd, h, 0x613) == 0, "CONNECT (RC) to a UD listener");
	expect_event(fd, h, RDMA_CM_EVENT_REJECTED, &ev, "REQ to a UD listener");
	printf("REQ to a UD listener: REJECTED status %d\n", (int32_t)ev.status);
	CHECK(destroy_id(fd, h) == 3, "DESTROY_ID (RC)");
	send_byte(p.to_child, 'E');
	close(fd);
	peer_end(&p);
}

/* Destroyed right after CONNECT: the peer's new id is rejected. */
static void lc_connect(void)
{
	struct peer p;
	int fd;
	uint32_t h;

	peer_start(&p, lc_connect_passive);
	fd = open_node(0);
	wait_byte(p.from_child, 'L', 10000, "listen");
	h = routed_id(fd, 1, ADDR_Y, 7603);
	CHECK(connect_id(fd, h, 0x603) == 0, "CONNECT");
	CHECK(destroy_id(fd, h) == 2, "DESTROY_ID after CONNECT");
	CHECK(!readable(fd, 200), "an event of a destroyed id");
	close(fd);
	peer_end(&p);
}

/* Passive: a listener whose requests are never read, destroyed or its
 * file closed (by exiting). */
static void lc_unread_passive(int up, int down, uint16_t port, int destroy)
{
	int fd = open_node(0);
	uint32_t l = listener(fd, 0x1e, ADDR_Y, port, 0);

	send_byte(up, 'L');
	CHECK(readable(fd, 10000), "no request within 10 s");
	wait_byte(down, 'C', 10000, "connects");
	usleep(300000);
	if (destroy) {
		CHECK(destroy_id(fd, l) == 0, "DESTROY_ID of the listener");
		CHECK(!readable(fd, 200), "requests of a destroyed listener left");
	}
	/* else: exit closes the file. */
}

static void lc_unread_destroy_passive(int up, int down)
{
	lc_unread_passive(up, down, 7604, 1);
}

static void lc_unread_close_passive(int up, int down)
{
	lc_unread_passive(up, down, 7605, 0);
}

/* Two connection requests never read by the peer: both rejected. */
static void lc_unread(uint16_t port, void (*passive)(int, int))
{
	struct peer p;
	int fd;
	struct rdma_ucm_event_resp ev;
	uint32_t h[2];

	peer_start(&p, passive);
	fd = open_node(0);
	wait_byte(p.from_child, 'L', 10000, "listen");
	for (int i = 0; i < 2; i++) {
		h[i] = routed_id(fd, 10 + i, ADDR_Y, port);
		CHECK(connect_id(fd, h[i], 0x700 + i) == 0, "CONNECT %d", i);
	}
	send_byte(p.to_child, 'C');
	for (int i = 0; i < 2; i++) {
		long t0 = now_ms();

		CHECK(get_event(fd, &ev, 10000) == 0, "no answer within 10 s");
		CHECK(ev.event == RDMA_CM_EVENT_REJECTED && (ev.id == h[0] || ev.id == h[1]),
		      "event %u id %u status %d", ev.event, ev.id, (int32_t)ev.status);
		printf("active: REJECTED status %d after %ld ms\n", (int32_t)ev.status,
		       now_ms() - t0);
	}
	for (int i = 0; i < 2; i++)
		CHECK(destroy_id(fd, h[i]) == 3, "events_reported %d", i);
	close(fd);
	peer_end(&p);
}

/* Passive: accepts (a made-up QP), then its connection must end (the
 * active side's process exits before ACCEPT'ing the REP). */
static void lc_exit_active_passive(int up, int down)
{
	int fd = open_node(0);
	struct rdma_ucm_event_resp ev;
	uint32_t l = listener(fd, 0x1e, ADDR_Y, 7606, 0), c;
	long t0;

	send_byte(up, 'L');
	CHECK(get_event(fd, &ev, 10000) == 0 && ev.event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "no CONNECT_REQUEST (%u)", ev.event);
	c = ev.id;
	CHECK(accept_id(fd, c, 0xacc, 0xc0) == 0, "ACCEPT");
	wait_byte(down, 'X', 10000, "active exit");
	t0 = now_ms();
	CHECK(get_event(fd, &ev, 30000) == 0, "connection not ended within 30 s");
	CHECK(ev.id == c && ev.uid == 0xc0 && (ev.event == RDMA_CM_EVENT_DISCONNECTED ||
					       ev.event == RDMA_CM_EVENT_REJECTED),
	      "event %u id %u status %d", ev.event, ev.id, (int32_t)ev.status);
	printf("passive: event %u status %d %ld ms after the active side exited\n", ev.event,
	       (int32_t)ev.status, now_ms() - t0);
	CHECK(destroy_id(fd, c) == 1, "events_reported of the accepted id");
	CHECK(destroy_id(fd, l) == 1, "events_reported of the listener");
	close(fd);
}

/* The active side gets CONNECT_RESPONSE, then its process exits. */
static void lc_exit_active(void)
{
	struct peer p;
	struct rdma_ucm_event_resp ev;
	pid_t pid;
	int st;

	peer_start(&p, lc_exit_active_passive);
	wait_byte(p.from_child, 'L', 10000, "listen");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fd = open_node(0);
		uint32_t h = routed_id(fd, 1, ADDR_Y, 7606);

		alarm(30);
		CHECK(connect_id(fd, h, 0x606) == 0, "CONNECT");
		expect_event(fd, h, RDMA_CM_EVENT_CONNECT_RESPONSE, &ev, "active");
		CHECK(ev.param.conn.qp_num == 0xacc, "REP's qp_num %x", ev.param.conn.qp_num);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "active side failed (%x)", st);
	send_byte(p.to_child, 'X');
	peer_end(&p);
}

/* Passive: accepts, then exits once the active side has the REP. */
static void lc_exit_passive_passive(int up, int down)
{
	int fd = open_node(0);
	struct rdma_ucm_event_resp ev;

	listener(fd, 0x1e, ADDR_Y, 7607, 0);
	send_byte(up, 'L');
	CHECK(get_event(fd, &ev, 10000) == 0 && ev.event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "no CONNECT_REQUEST (%u)", ev.event);
	CHECK(accept_id(fd, ev.id, 0xacc, 0xc0) == 0, "ACCEPT");
	wait_byte(down, 'R', 10000, "CONNECT_RESPONSE");
	/* exit closes the file */
}

/* The passive side's process exits after its REP: the connection ends. */
static void lc_exit_passive(void)
{
	struct peer p;
	int fd;
	struct rdma_ucm_event_resp ev;
	uint32_t h;
	long t0;

	peer_start(&p, lc_exit_passive_passive);
	fd = open_node(0);
	wait_byte(p.from_child, 'L', 10000, "listen");
	h = routed_id(fd, 1, ADDR_Y, 7607);
	CHECK(connect_id(fd, h, 0x607) == 0, "CONNECT");
	expect_event(fd, h, RDMA_CM_EVENT_CONNECT_RESPONSE, &ev, "active");
	send_byte(p.to_child, 'R');
	peer_end(&p);
	t0 = now_ms();
	CHECK(get_event(fd, &ev, 30000) == 0, "connection not ended within 30 s");
	CHECK(ev.id == h && (ev.event == RDMA_CM_EVENT_DISCONNECTED ||
			     ev.event == RDMA_CM_EVENT_REJECTED),
	      "event %u id %u status %d", ev.event, ev.id, (int32_t)ev.status);
	printf("active: event %u status %d %ld ms after the passive side exited\n", ev.event,
	       (int32_t)ev.status, now_ms() - t0);
	CHECK(destroy_id(fd, h) == 4, "events_reported");
	close(fd);
}

static void lc_unread_destroy(void)
{
	lc_unread(7604, lc_unread_destroy_passive);
}

static void lc_unread_closed(void)
{
	lc_unread(7605, lc_unread_close_passive);
}

/* Many ids with their events never read, a listener, then the file
 * closed. */
static void lc_unread_close(void)
{
	int fd = open_node(0);
	uint32_t h;

	listener(fd, 1, ADDR_X, 7608, 0);
	for (int i = 0; i < 8; i++) {
		h = create_id(fd, 100 + i);
		CHECK(resolve_ip(fd, h, i & 1 ? "10.200.0.1" : ADDR_Y, 7608) == 0, "RESOLVE_IP");
	}
	CHECK(readable(fd, 5000), "no event");
	close(fd);
}

/* One step of the lifecycle, by name (ucma.sh runs each as a case). */
static void case_lifecycle(const char *step)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} steps[] = {
		{ "addr_destroy", lc_addr },
		{ "route_destroy", lc_route },
		{ "connect_destroy", lc_connect },
		{ "listener_destroy", lc_unread_destroy },
		{ "listener_close", lc_unread_closed },
		{ "active_exit", lc_exit_active },
		{ "passive_exit", lc_exit_passive },
		{ "unread_close", lc_unread_close },
	};

	alarm(60);
	for (unsigned int i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (strcmp(step, steps[i].name))
			continue;
		long t0 = now_ms();

		steps[i].run();
		printf("%s: %ld ms\n", step, now_ms() - t0);
		return;
	}
	CHECK(0, "no step %s", step);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ucma_user CASE NODE [NETNS_FILE STEP]\n");
		return 2;
	}
	node = argv[2];
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(argv[1], "framing"))
		case_framing();
	else if (!strcmp(argv[1], "handles"))
		case_handles();
	else if (!strcmp(argv[1], "c_errnos"))
		case_c_errnos();
	else if (!strcmp(argv[1], "events"))
		case_events();
	else if (!strcmp(argv[1], "mcast"))
		case_mcast();
	else if (!strcmp(argv[1], "sidr") && argc == 4) {
		ns_y = argv[3];
		case_sidr();
	} else if (!strcmp(argv[1], "lifecycle") && argc == 5) {
		ns_y = argv[3];
		case_lifecycle(argv[4]);
	} else
		return 2;
	return 0;
}
