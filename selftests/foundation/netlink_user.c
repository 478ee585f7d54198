// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space side of netlink.sh: requests to rdma_netlink_test's
 * NLDEV server on netlink unit 31 (rdma_netlink_test.rs), built as
 * libibverbs 44 and iproute2's rdma build theirs, and the replies checked
 * byte by byte where it matters.
 *
 * usage: netlink_user requests|dump|errors|admin|netns|gone
 *        netlink_user hold READY_FILE
 * Prints what failed and exits 1, or exits 0. "hold" opens a socket of
 * the unit, checks a round trip, creates READY_FILE and waits for a
 * signal (the module must not unload meanwhile). "gone" checks that the
 * unit is no longer registered (after the module is unloaded).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/check.h"

#define UNIT 31
#define NDEVS 40
#define NLDEV(op) ((5 << 10) + (op))
#define CMD_GET 1
#define CMD_NEWLINK 3
#define CMD_DELLINK 4
#define CMD_PORT_GET 5
#define CMD_SYS_GET 6
#define CMD_SYS_SET 7
#define CMD_GET_CHARDEV 15
#define A_DEV_INDEX 1
#define A_DEV_NAME 2
#define A_PORT_INDEX 3
#define A_NODE_GUID 6
#define A_PORT_STATE 12
#define A_DEV_NODE_TYPE 14
#define A_NDEV_NAME 51
#define A_LINK_TYPE 65
#define A_NETNS_MODE 66
#define A_DEV_PROTOCOL 67
#define A_CHARDEV_TYPE 69
#define A_CHARDEV_NAME 70
#define A_CHARDEV_ABI 71
#define A_CHARDEV 72
#define A_DRIVER_ID 73
#define A_COPY_ON_FORK 93
#define MAX_ATTR 104

static uint32_t my_port;

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, UNIT);

	CHECK(fd >= 0, "socket(AF_NETLINK, %d)", UNIT);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind");
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0, "getsockname");
	my_port = sa.nl_pid;
	return fd;
}

struct msg {
	unsigned char b[512];
	size_t len;
};

static struct nlmsghdr *msg_start(struct msg *m, uint16_t type, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr *h = (struct nlmsghdr *)m->b;

	memset(m, 0, sizeof(*m));
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	h->nlmsg_pid = 0;
	m->len = NLMSG_HDRLEN;
	h->nlmsg_len = m->len;
	return h;
}

static void put_attr(struct msg *m, uint16_t type, const void *v, size_t n)
{
	struct nlattr *a = (struct nlattr *)(m->b + m->len);

	a->nla_len = NLA_HDRLEN + n;
	a->nla_type = type;
	memcpy(a + 1, v, n);
	m->len += NLA_ALIGN(a->nla_len);
	((struct nlmsghdr *)m->b)->nlmsg_len = m->len;
}

static void put_u32(struct msg *m, uint16_t type, uint32_t v)
{
	put_attr(m, type, &v, 4);
}

static void put_str(struct msg *m, uint16_t type, const char *s)
{
	put_attr(m, type, s, strlen(s) + 1);
}

static void send_raw(int fd, const void *b, size_t n)
{
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };

	CHECK(sendto(fd, b, n, 0, (struct sockaddr *)&k, sizeof(k)) == (ssize_t)n, "sendto");
}

static void send_msg(int fd, struct msg *m)
{
	send_raw(fd, m->b, m->len);
}

static unsigned char rbuf[8192];

/* One datagram; its length. Fails if nothing comes within a second. */
static size_t recv_dgram(int fd)
{
	struct sockaddr_nl from;
	socklen_t fl = sizeof(from);
	struct timeval tv = { .tv_sec = 1 };
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recvfrom(fd, rbuf, sizeof(rbuf), MSG_TRUNC, (struct sockaddr *)&from, &fl);
	CHECK(n > 0, "recv");
	CHECK((size_t)n <= 4096, "a datagram of %zd bytes", n);
	CHECK(from.nl_pid == 0, "from port %u, not the kernel", from.nl_pid);
	return n;
}

static struct nlmsghdr *pending;
static int pending_len;

static void expect_nothing(int fd)
{
	ssize_t n;

	CHECK(!pending || pending_len == 0, "%d bytes of messages left", pending_len);
	pending = NULL;
	n = recv(fd, rbuf, sizeof(rbuf), MSG_DONTWAIT);

	CHECK(n < 0 && errno == EAGAIN, "an unexpected datagram of %zd bytes", n);
}

/* The attributes of a message, by type (last wins); lengths checked. */
struct attrs {
	struct nlattr *a[MAX_ATTR];
};

static void parse(struct nlmsghdr *h, struct attrs *t)
{
	int rem = h->nlmsg_len - NLMSG_HDRLEN;
	struct nlattr *a = (struct nlattr *)NLMSG_DATA(h);

	memset(t, 0, sizeof(*t));
	while (rem >= NLA_HDRLEN) {
		CHECK(a->nla_len >= NLA_HDRLEN && a->nla_len <= rem, "attribute length %u",
		      a->nla_len);
		if ((a->nla_type & NLA_TYPE_MASK) < MAX_ATTR)
			t->a[a->nla_type & NLA_TYPE_MASK] = a;
		rem -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	CHECK(rem == 0, "%d trailing bytes", rem);
}

static void *val(struct attrs *t, int type, size_t len)
{
	struct nlattr *a = t->a[type];

	CHECK(a, "attribute %d missing", type);
	CHECK(a->nla_len - NLA_HDRLEN == len, "attribute %d of %u bytes, not %zu", type,
	      a->nla_len - NLA_HDRLEN, len);
	return a + 1;
}

static uint32_t get_u32(struct attrs *t, int type)
{
	uint32_t v;

	memcpy(&v, val(t, type, 4), 4);
	return v;
}

static uint64_t get_u64(struct attrs *t, int type)
{
	uint64_t v;

	memcpy(&v, val(t, type, 8), 8);
	return v;
}

static uint8_t get_u8(struct attrs *t, int type)
{
	return *(uint8_t *)val(t, type, 1);
}

static const char *get_str(struct attrs *t, int type)
{
	struct nlattr *a = t->a[type];
	const char *s;

	CHECK(a, "attribute %d missing", type);
	s = (const char *)(a + 1);
	CHECK(a->nla_len > NLA_HDRLEN && s[a->nla_len - NLA_HDRLEN - 1] == 0,
	      "attribute %d not NUL-terminated", type);
	return s;
}

/* The messages of the last datagram not yet taken (pending, above): a
 * reply and its acknowledgement may share a datagram. */

static struct nlmsghdr *next_msg(int fd)
{
	struct nlmsghdr *h;

	if (!pending || !NLMSG_OK(pending, pending_len)) {
		pending_len = recv_dgram(fd);
		pending = (struct nlmsghdr *)rbuf;
		CHECK(NLMSG_OK(pending, pending_len), "a bad message");
	}
	h = pending;
	pending = NLMSG_NEXT(pending, pending_len);
	CHECK(pending_len >= 0, "a message past its datagram");
	return h;
}

/* Receives the next message, checks its header. */
static struct nlmsghdr *recv_one(int fd, uint16_t type, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr *h = next_msg(fd);

	CHECK(h->nlmsg_type == type, "type %#x, expected %#x", h->nlmsg_type, type);
	CHECK(h->nlmsg_flags == flags, "flags %#x, expected %#x", h->nlmsg_flags, flags);
	CHECK(h->nlmsg_seq == seq, "seq %u, expected %u", h->nlmsg_seq, seq);
	CHECK(h->nlmsg_pid == my_port, "pid %u, expected %u", h->nlmsg_pid, my_port);
	return h;
}

/* Receives an NLMSG_ERROR answering seq; returns its error. */
static int recv_error(int fd, uint32_t seq, uint16_t req_type)
{
	struct nlmsghdr *h = recv_one(fd, NLMSG_ERROR, NLM_F_CAPPED, seq);
	struct nlmsgerr *e = NLMSG_DATA(h);

	CHECK(h->nlmsg_len == NLMSG_HDRLEN + sizeof(*e), "error of %u bytes", h->nlmsg_len);
	CHECK(e->msg.nlmsg_seq == seq && e->msg.nlmsg_type == req_type, "quoted header");
	return e->error;
}

/* libibverbs' requests (flags as libnl sets them, no ACK), rdma's GET and
 * PORT_GET of one object with an ACK. */
static void t_requests(void)
{
	int fd = nl_open();
	struct msg m;
	struct attrs t;
	uint64_t cdev;

	/* rdmanl_get_chardev(nl, 3, "uverbs") */
	msg_start(&m, NLDEV(CMD_GET_CHARDEV), NLM_F_REQUEST, 100);
	put_u32(&m, A_DEV_INDEX, 3);
	put_str(&m, A_CHARDEV_TYPE, "uverbs");
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_GET_CHARDEV), 0, 100), &t);
	CHECK(strcmp(get_str(&t, A_CHARDEV_NAME), "uverbs3") == 0, "chardev name");
	CHECK(get_u64(&t, A_CHARDEV_ABI) == 6, "abi");
	CHECK(get_u32(&t, A_DRIVER_ID) == 14, "driver id");
	cdev = get_u64(&t, A_CHARDEV);
	CHECK((cdev & 0xfff00) >> 8 == 231, "major");
	CHECK(((cdev & 0xff) | ((cdev >> 12) & 0xfff00)) == 195, "minor");
	expect_nothing(fd);

	/* rdmanl_get_copy_on_fork */
	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST, 101);
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_SYS_GET), 0, 101), &t);
	CHECK(get_u8(&t, A_COPY_ON_FORK) == 1, "copy on fork");
	CHECK(get_u8(&t, A_NETNS_MODE) == 1, "netns mode");
	expect_nothing(fd);

	/* rdma dev show nltest7: the reply, then the ACK. */
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_ACK, 102);
	put_u32(&m, A_DEV_INDEX, 7);
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_GET), 0, 102), &t);
	CHECK(get_u32(&t, A_DEV_INDEX) == 7, "index");
	CHECK(strcmp(get_str(&t, A_DEV_NAME), "nltest7") == 0, "name");
	CHECK(get_u64(&t, A_NODE_GUID) == 0x1007, "node guid");
	CHECK(get_u32(&t, A_PORT_INDEX) == 1, "ports");
	CHECK(get_u8(&t, A_DEV_NODE_TYPE) == 1, "node type");
	CHECK(strcmp(get_str(&t, A_DEV_PROTOCOL), "roce") == 0, "protocol");
	CHECK(recv_error(fd, 102, NLDEV(CMD_GET)) == 0, "ack");
	expect_nothing(fd);

	/* rdma link show nltest2/1 */
	msg_start(&m, NLDEV(CMD_PORT_GET), NLM_F_REQUEST | NLM_F_ACK, 103);
	put_u32(&m, A_DEV_INDEX, 2);
	put_u32(&m, A_PORT_INDEX, 1);
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_PORT_GET), 0, 103), &t);
	CHECK(get_u8(&t, A_PORT_STATE) == 4, "port state");
	CHECK(strcmp(get_str(&t, A_NDEV_NAME), "lo") == 0, "netdev");
	CHECK(recv_error(fd, 103, NLDEV(CMD_PORT_GET)) == 0, "ack");
	expect_nothing(fd);
	close(fd);
}

/* A GET dump as rdma sends it (with NLM_F_ACK): NDEVS devices in order,
 * over several datagrams, NLM_F_MULTI, then NLMSG_DONE, no ACK. */
static void t_dump(void)
{
	int fd = nl_open();
	struct msg m;
	struct attrs t;
	uint32_t next = 0;
	int dgrams = 0, done = 0;

	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 200);
	send_msg(fd, &m);
	while (!done) {
		size_t n = recv_dgram(fd);
		struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
		int len = n;

		dgrams++;
		for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			CHECK(!done, "a message after NLMSG_DONE");
			CHECK(h->nlmsg_flags == NLM_F_MULTI, "flags %#x", h->nlmsg_flags);
			CHECK(h->nlmsg_seq == 200 && h->nlmsg_pid == my_port, "seq/pid");
			if (h->nlmsg_type == NLMSG_DONE) {
				CHECK(h->nlmsg_len == NLMSG_HDRLEN + 4, "done length");
				CHECK(*(int *)NLMSG_DATA(h) == 0, "done value");
				done = 1;
				continue;
			}
			CHECK(h->nlmsg_type == NLDEV(CMD_GET), "type %#x", h->nlmsg_type);
			parse(h, &t);
			CHECK(get_u32(&t, A_DEV_INDEX) == next, "index %u, expected %u",
			      get_u32(&t, A_DEV_INDEX), next);
			next++;
		}
		CHECK(len == 0, "%d bytes left in the datagram", len);
	}
	CHECK(next == NDEVS, "%u devices, expected %d", next, NDEVS);
	CHECK(dgrams >= 2, "one datagram for %d devices", NDEVS);
	expect_nothing(fd);
	printf("dump: %u devices in %d datagrams\n", next, dgrams);
	close(fd);
}

/* Errors, each answered with its errno and the request's header. */
static void t_errors(void)
{
	int fd = nl_open();
	struct msg m;
	unsigned char two[64];
	size_t n1;

	/* GET without DEV_INDEX: EINVAL, even without NLM_F_ACK. */
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST, 300);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 300, NLDEV(CMD_GET)) == -EINVAL, "missing index");
	/* DEV_INDEX of 2 bytes. */
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST, 301);
	put_attr(&m, A_DEV_INDEX, "\x01\x00", 2);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 301, NLDEV(CMD_GET)) == -EINVAL, "short index");
	/* An attribute running past the message. */
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST, 302);
	put_u32(&m, A_DEV_INDEX, 1);
	((struct nlattr *)(m.b + NLMSG_HDRLEN))->nla_len = 40;
	send_msg(fd, &m);
	CHECK(recv_error(fd, 302, NLDEV(CMD_GET)) == -EINVAL, "long attribute");
	/* An unterminated CHARDEV_TYPE. */
	msg_start(&m, NLDEV(CMD_GET_CHARDEV), NLM_F_REQUEST, 303);
	put_attr(&m, A_CHARDEV_TYPE, "uverbs", 6);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 303, NLDEV(CMD_GET_CHARDEV)) == -EINVAL, "string");
	/* A command the codec does not decode (SYS_SET): EOPNOTSUPP. */
	msg_start(&m, NLDEV(CMD_SYS_SET), NLM_F_REQUEST, 304);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 304, NLDEV(CMD_SYS_SET)) == -EOPNOTSUPP, "sys set");
	/* Another client, and an op past the last: EINVAL. */
	msg_start(&m, (4 << 10) + 1, NLM_F_REQUEST, 305);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 305, (4 << 10) + 1) == -EINVAL, "client");
	msg_start(&m, NLDEV(29), NLM_F_REQUEST, 306);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 306, NLDEV(29)) == -EINVAL, "op");
	/* A device that does not exist: the server's ENODEV. */
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST | NLM_F_ACK, 307);
	put_u32(&m, A_DEV_INDEX, NDEVS);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 307, NLDEV(CMD_GET)) == -ENODEV, "no device");
	/* Not a request: ignored, acknowledged if asked. */
	msg_start(&m, NLDEV(CMD_GET), 0, 308);
	send_msg(fd, &m);
	msg_start(&m, NLDEV(CMD_GET), NLM_F_ACK, 309);
	send_msg(fd, &m);
	CHECK(recv_error(fd, 309, NLDEV(CMD_GET)) == 0, "ack of a non-request");
	expect_nothing(fd);
	/* Two requests in one datagram: both answered, in one reply datagram. */
	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST, 310);
	memcpy(two, m.b, m.len);
	n1 = m.len;
	msg_start(&m, NLDEV(CMD_GET), NLM_F_REQUEST, 311);
	memcpy(two + n1, m.b, m.len);
	send_raw(fd, two, n1 + m.len);
	{
		size_t n = recv_dgram(fd);
		struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
		int len = n;

		CHECK(NLMSG_OK(h, len) && h->nlmsg_type == NLDEV(CMD_SYS_GET) &&
			      h->nlmsg_seq == 310, "first reply");
		h = NLMSG_NEXT(h, len);
		CHECK(NLMSG_OK(h, len) && h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == 311,
		      "second reply");
		CHECK(((struct nlmsgerr *)NLMSG_DATA(h))->error == -EINVAL, "second error");
		h = NLMSG_NEXT(h, len);
		CHECK(len == 0, "more replies");
	}
	/* A message whose length is past the datagram: dropped silently. */
	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST | NLM_F_ACK, 312);
	((struct nlmsghdr *)m.b)->nlmsg_len = 200;
	send_msg(fd, &m);
	expect_nothing(fd);
	/* Still served afterwards. */
	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST, 313);
	send_msg(fd, &m);
	recv_one(fd, NLDEV(CMD_SYS_GET), 0, 313);
	close(fd);
}

static void link_requests(int fd, uint32_t seq, int want)
{
	struct msg m;

	/* rdma link add nltestx type rxe netdev lo */
	msg_start(&m, NLDEV(CMD_NEWLINK), NLM_F_REQUEST | NLM_F_ACK, seq);
	put_str(&m, A_DEV_NAME, "nltestx");
	put_str(&m, A_LINK_TYPE, "rxe");
	put_str(&m, A_NDEV_NAME, "lo");
	send_msg(fd, &m);
	CHECK(recv_error(fd, seq, NLDEV(CMD_NEWLINK)) == want, "newlink");
	/* rdma link delete nltest1 */
	msg_start(&m, NLDEV(CMD_DELLINK), NLM_F_REQUEST | NLM_F_ACK, seq + 1);
	put_u32(&m, A_DEV_INDEX, 1);
	send_msg(fd, &m);
	CHECK(recv_error(fd, seq + 1, NLDEV(CMD_DELLINK)) == want, "dellink");
	expect_nothing(fd);
}

/* NEWLINK/DELLINK need CAP_NET_ADMIN: acknowledged as root, EPERM once it
 * is dropped (on a socket opened before, and on a new one). */
static void t_admin(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	int fd = nl_open();
	int fd2;

	link_requests(fd, 400, 0);
	CHECK(syscall(SYS_capget, &hdr, data) == 0, "capget");
	data[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
	data[CAP_NET_ADMIN / 32].permitted &= ~(1u << (CAP_NET_ADMIN % 32));
	CHECK(syscall(SYS_capset, &hdr, data) == 0, "capset");
	link_requests(fd, 410, -EPERM);
	fd2 = nl_open();
	link_requests(fd2, 420, -EPERM);
	close(fd2);
	close(fd);
}

/* A network namespace made after the endpoint: it has its own kernel
 * socket, which answers as the initial namespace's does. */
static void t_netns(void)
{
	int fd;
	struct msg m;
	struct attrs t;

	CHECK(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET)");
	fd = nl_open();
	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST, 500);
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_SYS_GET), 0, 500), &t);
	CHECK(get_u8(&t, A_NETNS_MODE) == 1, "netns mode in another namespace");
	expect_nothing(fd);
	msg_start(&m, NLDEV(CMD_GET_CHARDEV), NLM_F_REQUEST, 501);
	put_u32(&m, A_DEV_INDEX, 3);
	put_str(&m, A_CHARDEV_TYPE, "uverbs");
	send_msg(fd, &m);
	parse(recv_one(fd, NLDEV(CMD_GET_CHARDEV), 0, 501), &t);
	CHECK(strcmp(get_str(&t, A_CHARDEV_NAME), "uverbs3") == 0, "chardev in another namespace");
	expect_nothing(fd);
	close(fd);
}

static void t_hold(const char *ready)
{
	int fd = nl_open();
	struct msg m;
	int r;

	msg_start(&m, NLDEV(CMD_SYS_GET), NLM_F_REQUEST, 600);
	send_msg(fd, &m);
	recv_one(fd, NLDEV(CMD_SYS_GET), 0, 600);
	r = open(ready, O_CREAT | O_WRONLY, 0600);
	CHECK(r >= 0, "create %s", ready);
	close(r);
	for (;;)
		pause();
}

static void t_gone(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW, UNIT);

	CHECK(fd < 0 && errno == EPROTONOSUPPORT, "the unit is still registered");
}

int main(int argc, char **argv)
{
	const char *t = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(t, "requests"))
		t_requests();
	else if (!strcmp(t, "dump"))
		t_dump();
	else if (!strcmp(t, "errors"))
		t_errors();
	else if (!strcmp(t, "admin"))
		t_admin();
	else if (!strcmp(t, "netns"))
		t_netns();
	else if (!strcmp(t, "hold") && argc > 2)
		t_hold(argv[2]);
	else if (!strcmp(t, "gone"))
		t_gone();
	else {
		fprintf(stderr, "usage: netlink_user requests|dump|errors|admin|netns|gone|hold FILE\n");
		return 2;
	}
	return 0;
}
