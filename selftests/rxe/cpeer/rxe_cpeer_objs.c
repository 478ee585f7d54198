// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_cpeer objects: QPs, CQs or MRs of the kernel's verbs made in numbers,
 * for the benchmark's memory rows (see rxe_cpeer.h). What the benchmark
 * measures is the difference of the guest's RAM in use around
 * rxe_cpeer_objs_make; everything else (the PD, the CQ the QPs share, the
 * table of objects) is made before, by rxe_cpeer_objs_new.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "rxe_cpeer.h"

struct rxe_cpeer_objs {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;	/* the QPs' send and receive CQ */
	u32 kind;
	u32 depth;
	u32 n;
	u32 made;
	void *obj[];
};

void rxe_cpeer_objs_destroy(struct rxe_cpeer_objs *o)
{
	u32 i;

	if (!o)
		return;
	for (i = o->made; i-- > 0;) {
		switch (o->kind) {
		case RXE_CPEER_OBJ_QP:
			ib_destroy_qp(o->obj[i]);
			break;
		case RXE_CPEER_OBJ_CQ:
			ib_free_cq(o->obj[i]);
			break;
		case RXE_CPEER_OBJ_MR:
			ib_dereg_mr(o->obj[i]);
			break;
		}
	}
	if (o->cq)
		ib_free_cq(o->cq);
	if (o->pd)
		ib_dealloc_pd(o->pd);
	if (o->dev)
		ib_device_put(o->dev);
	kfree(o);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_objs_destroy);

int rxe_cpeer_objs_new(const char *ibdev, u32 kind, u32 n, u32 depth,
		       struct rxe_cpeer_objs **out)
{
	struct rxe_cpeer_objs *o;
	int err;

	if (kind > RXE_CPEER_OBJ_MR || !n || n > 4096 || !depth || depth > 4096)
		return -EINVAL;
	o = kzalloc(struct_size(o, obj, n), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	o->kind = kind;
	o->depth = depth;
	o->n = n;
	o->dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
	if (!o->dev) {
		err = -ENODEV;
		goto fail;
	}
	o->pd = ib_alloc_pd(o->dev, 0);
	if (IS_ERR(o->pd)) {
		err = PTR_ERR(o->pd);
		o->pd = NULL;
		goto fail;
	}
	o->cq = ib_alloc_cq(o->dev, NULL, depth + 1, 0, IB_POLL_DIRECT);
	if (IS_ERR(o->cq)) {
		err = PTR_ERR(o->cq);
		o->cq = NULL;
		goto fail;
	}
	*out = o;
	return 0;
fail:
	rxe_cpeer_objs_destroy(o);
	return err;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_objs_new);

/* One object of o's kind, or an ERR_PTR. */
static void *make_one(struct rxe_cpeer_objs *o)
{
	struct ib_qp_init_attr init = {};

	switch (o->kind) {
	case RXE_CPEER_OBJ_QP:
		init.send_cq = o->cq;
		init.recv_cq = o->cq;
		init.cap.max_send_wr = o->depth;
		init.cap.max_recv_wr = o->depth;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		init.sq_sig_type = IB_SIGNAL_REQ_WR;
		init.qp_type = IB_QPT_RC;
		return ib_create_qp(o->pd, &init);
	case RXE_CPEER_OBJ_CQ:
		return ib_alloc_cq(o->dev, NULL, o->depth, 0, IB_POLL_DIRECT);
	default:
		return ib_alloc_mr(o->pd, IB_MR_TYPE_MEM_REG, o->depth);
	}
}

int rxe_cpeer_objs_make(struct rxe_cpeer_objs *o)
{
	void *obj;

	while (o->made < o->n) {
		obj = make_one(o);
		if (IS_ERR(obj))
			return PTR_ERR(obj);
		o->obj[o->made++] = obj;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_objs_make);
