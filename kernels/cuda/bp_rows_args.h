/*
 * bp_rows_args.h — where softmax and the norms (bp_softmax_{f,d},
 * bp_norm_{f,d}) go one block per row, read by the kernels
 * (kernels/cuda/bp_rows.cuh) and by the launch that sizes their grid
 * (plugins/gpu/ops_reduce.c), so both make the same choice.
 *
 * One block per row, the row staged in dynamic shared memory (len elements
 * of the compute type), for rows of at least BPK_ROW_BLOCK_MIN elements and
 * at most BPK_ROW_SMEM bytes; other rows one warp per row.
 */
#ifndef BP_ROWS_ARGS_H
#define BP_ROWS_ARGS_H

#define BPK_ROW_BLOCK_MIN 512
#define BPK_ROW_SMEM 32768

#endif /* BP_ROWS_ARGS_H */
