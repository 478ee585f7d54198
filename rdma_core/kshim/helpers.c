// SPDX-License-Identifier: GPL-2.0
/*
 * C wrappers of static inline kernel functions (see helpers.h).
 *
 * Field reads of struct net_device go through here too: READ_ONCE() where
 * the kernel updates a field without the reader's lock.
 */
#include <linux/bottom_half.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/kernel_stat.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/ratelimit.h>
#include <linux/timer.h>
#include <linux/netdevice.h>
#include <linux/preempt.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/cpumask.h>
#include <linux/smp.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "helpers.h"

void rdma_rs_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rdma_rs_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

int rdma_rs_netdev_ifindex(const struct net_device *dev)
{
	return READ_ONCE(dev->ifindex);
}

unsigned int rdma_rs_netdev_mtu(const struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

const char *rdma_rs_netdev_name(const struct net_device *dev)
{
	return dev->name;
}

void rdma_rs_might_sleep(void)
{
	might_sleep();
}

unsigned long rdma_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rdma_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

bool rdma_rs_in_task(void)
{
	return in_task();
}

void rdma_rs_msleep(unsigned int msecs)
{
	msleep(msecs);
}

void rdma_rs_cond_resched(void)
{
	cond_resched();
}

/*
 * Lets every other runnable task of this CPU go first, now: for a loop that
 * waits for work another task does (a benchmark polling for completions
 * that the QP's work makes), which cond_resched() would leave spinning
 * until the scheduler's tick took the CPU from it.
 */
void rdma_rs_yield(void)
{
	might_sleep();
	yield();
}

void rdma_rs_usleep(unsigned long min_us, unsigned long max_us)
{
	usleep_range(min_us, max_us);
}

u64 rdma_rs_cpu_idle_ns(void)
{
	u64 sum = 0;
	int cpu;

	for_each_online_cpu(cpu)
		sum += kcpustat_cpu(cpu).cpustat[CPUTIME_IDLE] +
		       kcpustat_cpu(cpu).cpustat[CPUTIME_IOWAIT];
	return sum;
}

u64 rdma_rs_ram_in_use(void)
{
	struct sysinfo i;

	si_meminfo(&i);
	return (u64)(i.totalram - i.freeram) * i.mem_unit;
}

unsigned int rdma_rs_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

unsigned int rdma_rs_cpu_id(void)
{
	return raw_smp_processor_id();
}

unsigned long rdma_rs_local_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rdma_rs_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

void rdma_rs_local_bh_disable(void)
{
	local_bh_disable();
}

void rdma_rs_local_bh_enable(void)
{
	local_bh_enable();
}

void rdma_rs_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *))
{
	init_irq_work(work, func);
}

/*
 * Verb call-chain marking: a depth per CPU and per context level, changed
 * with preemption disabled (see rdma_core/verb.rs).
 */
struct rdma_rs_verb_depth {
	unsigned int level[4];
};

static DEFINE_PER_CPU(struct rdma_rs_verb_depth, rdma_rs_verb_depth);

static int rdma_rs_ctx_level(void)
{
	if (in_nmi())
		return 3;
	if (in_hardirq())
		return 2;
	if (in_serving_softirq())
		return 1;
	return 0;
}

void rdma_rs_verb_enter(void)
{
	preempt_disable();
	this_cpu_inc(rdma_rs_verb_depth.level[rdma_rs_ctx_level()]);
}

void rdma_rs_verb_exit(void)
{
	this_cpu_dec(rdma_rs_verb_depth.level[rdma_rs_ctx_level()]);
	preempt_enable();
}

bool rdma_rs_in_verb(void)
{
	bool in;

	preempt_disable();
	in = this_cpu_read(rdma_rs_verb_depth.level[rdma_rs_ctx_level()]) != 0;
	preempt_enable();
	return in;
}

bool rdma_rs_ratelimit_inline(void)
{
	static DEFINE_RATELIMIT_STATE(rs, 5 * HZ, 10);

	return __ratelimit(&rs);
}

bool rdma_rs_ratelimit_mgmt(void)
{
	static DEFINE_RATELIMIT_STATE(rs, 5 * HZ, 10);

	return __ratelimit(&rs);
}

void rdma_rs_timer_setup(struct timer_list *timer, void (*fn)(struct timer_list *))
{
	timer_setup(timer, fn, 0);
}

int rdma_rs_timer_arm_us(struct timer_list *timer, unsigned int usecs)
{
	return mod_timer(timer, jiffies + usecs_to_jiffies(usecs) + 1);
}

int rdma_rs_timer_shutdown(struct timer_list *timer)
{
	return timer_shutdown_sync(timer);
}

/* The lock of every kshim::global::Global: taken only to swap or clone. */
static DEFINE_SPINLOCK(rdma_rs_globals);

unsigned long rdma_rs_globals_lock(void)
{
	unsigned long flags;

	spin_lock_irqsave(&rdma_rs_globals, flags);
	return flags;
}

void rdma_rs_globals_unlock(unsigned long flags)
{
	spin_unlock_irqrestore(&rdma_rs_globals, flags);
}

struct workqueue_struct *rdma_rs_wq_alloc(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

void rdma_rs_wq_drain(struct workqueue_struct *wq)
{
	drain_workqueue(wq);
}

void rdma_rs_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

bool rdma_rs_module_get(struct module *module)
{
	return try_module_get(module);
}

void rdma_rs_module_put(struct module *module)
{
	module_put(module);
}

/* The calling thread's struct pid, held. */
struct pid *rdma_rs_pid_current(void)
{
	return get_task_pid(current, PIDTYPE_PID);
}

/* pid's number in the caller's PID namespace; 0 once its task is gone, or
 * if the namespace does not see it (as task_pid_vnr of a dead task). */
u32 rdma_rs_pid_vnr(struct pid *pid)
{
	u32 nr = 0;

	rcu_read_lock();
	if (pid_task(pid, PIDTYPE_PID))
		nr = pid_vnr(pid);
	rcu_read_unlock();
	return nr;
}

void rdma_rs_pid_put(struct pid *pid)
{
	put_pid(pid);
}
