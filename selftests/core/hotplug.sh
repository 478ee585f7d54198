#!/bin/sh
# Hot-plug ordering, typed client data, usage references, async events from
# every context, concurrent registration, and the driver unload fence.
. ../lib/ktap.sh
. ../lib/cleanup.sh

ktap_plan
ktap_module rdma_hotplug_test
rmmod rdma_hotplug_test 2>/dev/null
ktap_check "rdma_core_unloads" rmmod rdma_core
ktap_finish
