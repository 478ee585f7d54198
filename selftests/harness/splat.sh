#!/bin/sh
# Loads rdma_splat_test, whose init WARNs. Every case here passes: the run
# must still be failed by the host, on the splat alone.
. ../lib/ktap.sh
. ../lib/cleanup.sh

ktap_plan
ktap_check "load_module_that_warns" modprobe rdma_splat_test
rmmod rdma_splat_test
ktap_finish
