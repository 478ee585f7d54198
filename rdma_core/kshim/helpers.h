/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C wrappers of static inline kernel functions and macros, callable from
 * Rust. The kernel's rust/helpers/ is the pattern; these are the ones the
 * rdma crate needs that 6.12's kernel crate does not provide.
 */
#ifndef RDMA_RS_HELPERS_H
#define RDMA_RS_HELPERS_H

struct net_device;
struct work_struct;
struct irq_work;
struct timer_list;
struct workqueue_struct;
typedef struct spinlock spinlock_t;

void rdma_rs_dev_hold(struct net_device *dev);
void rdma_rs_dev_put(struct net_device *dev);
int rdma_rs_netdev_ifindex(const struct net_device *dev);
unsigned int rdma_rs_netdev_mtu(const struct net_device *dev);
const char *rdma_rs_netdev_name(const struct net_device *dev);
void rdma_rs_might_sleep(void);
unsigned long rdma_rs_spin_lock_irqsave(spinlock_t *lock);
void rdma_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
bool rdma_rs_in_task(void);
void rdma_rs_msleep(unsigned int msecs);
void rdma_rs_cond_resched(void);
void rdma_rs_yield(void);
void rdma_rs_usleep(unsigned long min_us, unsigned long max_us);
/* Idle and iowait time of the online CPUs, as accounted (ns). */
u64 rdma_rs_cpu_idle_ns(void);
/* RAM not free (total minus free pages), in bytes. */
u64 rdma_rs_ram_in_use(void);
unsigned int rdma_rs_nr_cpu_ids(void);
unsigned int rdma_rs_cpu_id(void);
unsigned long rdma_rs_local_irq_save(void);
void rdma_rs_local_irq_restore(unsigned long flags);
void rdma_rs_local_bh_disable(void);
void rdma_rs_local_bh_enable(void);
void rdma_rs_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *));
void rdma_rs_verb_enter(void);
void rdma_rs_verb_exit(void);
bool rdma_rs_in_verb(void);
bool rdma_rs_ratelimit_inline(void);
bool rdma_rs_ratelimit_mgmt(void);
void rdma_rs_timer_setup(struct timer_list *timer, void (*fn)(struct timer_list *));
int rdma_rs_timer_arm_us(struct timer_list *timer, unsigned int usecs);
int rdma_rs_timer_shutdown(struct timer_list *timer);
unsigned long rdma_rs_globals_lock(void);
struct workqueue_struct *rdma_rs_wq_alloc(const char *name);
void rdma_rs_wq_drain(struct workqueue_struct *wq);
void rdma_rs_wq_destroy(struct workqueue_struct *wq);
void rdma_rs_globals_unlock(unsigned long flags);
struct module;
bool rdma_rs_module_get(struct module *module);
void rdma_rs_module_put(struct module *module);
struct pid;
struct pid *rdma_rs_pid_current(void);
u32 rdma_rs_pid_vnr(struct pid *pid);
void rdma_rs_pid_put(struct pid *pid);

#endif
