#!/bin/sh
# read, write and poll of rdma::kshim::chardev: rdma_chardev_test's
# /dev/rdma_chardev_test (a queue of records per open file) driven by
# chardev_user: records in order and every refusal with its errno, a
# blocking reader and writer woken, poll(2) and epoll events (a file
# closed while in an epoll set is released cleanly), a signal ending a
# blocking read; then the module unloads.
. ../lib/ktap.sh
. ../lib/cleanup.sh

ktap_plan
ktap_check "load" modprobe rdma_chardev_test
ktap_check "records" chardev_user records
ktap_check "blocking" chardev_user blocking
ktap_check "poll" chardev_user poll
ktap_check "epoll" chardev_user epoll
ktap_check "signal" chardev_user signal
ktap_check "unload" rmmod rdma_chardev_test
ktap_finish
