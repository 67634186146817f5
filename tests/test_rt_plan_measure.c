/* What `ppcc run --check-plan` keeps of its forwards (issue 17,
 * src/runtime/exec/mem_account.c): each stage busy time, the wall and each
 * op's time are the median of the warm forwards (the first is cold and
 * does not count once there are others), so one slow or fast forward
 * moves nothing, with the fastest and slowest warm forward beside, as
 * ppcc_plan_measure_summarize sets them; starting over (forwards = 0)
 * forgets the history. */
#include <stdlib.h>
#include "../src/runtime/exec/exec.h"
#include "ppcc/predict.h"
#include "test_support.h"

START_TEST(busy_wall_and_ops_are_medians_of_warm_forwards) {
  double busy[2], lo[2], hi[2], op_ms[3];
  ppcc_plan_measure m = {.n_stages = 1, .stage_busy_ms = busy, .stage_busy_lo = lo, .stage_busy_hi = hi,
                         .op_busy_ms = op_ms, .n_ops = 3};
  /* forward: cold (100), then 3, 1, 50, 2: warm medians 2.5 (even count) then 3 */
  const double rows[][2] = {{100, 90}, {3, 30}, {1, 10}, {50, 500}, {2, 20}, {4, 40}};
  for (int r = 0; r < 6; r++) {
    double b[2] = {rows[r][0], rows[r][1]}, ops[3] = {rows[r][0], 7, rows[r][1]};
    rt_plan_measure_add_forward(&m, b, 2, rows[r][0] * 10, ops);
    ppcc_plan_measure_summarize(&m);
    ck_assert_int_eq(m.forwards, r + 1);
    ck_assert(m.filled);
    if (r == 0) ck_assert_double_eq(busy[0], 100); /* alone, the cold one is all there is */
    if (r == 2) ck_assert_double_eq(busy[0], 2);   /* 3 and 1 */
  }
  /* warm: 3 1 50 2 4 -> 3; 30 10 500 20 40 -> 30 */
  ck_assert_double_eq(busy[0], 3);
  ck_assert_double_eq(busy[1], 30);
  ck_assert_double_eq(lo[0], 1); /* the fastest and slowest warm forwards: not the cold 100 */
  ck_assert_double_eq(hi[0], 50);
  ck_assert_double_eq(lo[1], 10);
  ck_assert_double_eq(hi[1], 500);
  ck_assert_double_eq(m.wall_ms, 30);
  ck_assert_double_eq(op_ms[0], 3);
  ck_assert_double_eq(op_ms[1], 7);
  ck_assert_double_eq(op_ms[2], 30);
  m.forwards = 0, m.filled = false; /* start over: the history is gone */
  double b[2] = {8, 9}, ops[3] = {1, 2, 3};
  rt_plan_measure_add_forward(&m, b, 2, 5, ops);
  ppcc_plan_measure_summarize(&m);
  ck_assert_double_eq(busy[0], 8);
  ck_assert_double_eq(op_ms[2], 3);
  ppcc_plan_measure_release(&m);
  ck_assert_ptr_null(m.history);
}
END_TEST

/* Without op_busy_ms the history keeps only the stages and the wall. */
START_TEST(without_op_times) {
  double busy[1];
  ppcc_plan_measure m = {.n_stages = 1, .stage_busy_ms = busy};
  for (int r = 0; r < 4; r++) {
    double b[1] = {(double)(4 - r)};
    rt_plan_measure_add_forward(&m, b, 1, 1, NULL);
  }
  ppcc_plan_measure_summarize(&m);
  ck_assert_double_eq(busy[0], 2); /* warm 3 2 1 */
  ppcc_plan_measure_release(&m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("plan_measure");
  TCase *tc = t_add_tcase(s, "medians", 0);
  tcase_add_test(tc, busy_wall_and_ops_are_medians_of_warm_forwards);
  tcase_add_test(tc, without_op_times);
  return t_run_suite(s);
}
