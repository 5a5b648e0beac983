/* AdamW's numbers for one step (backend.h's adamw_step, cuda_elem.h's ce_adamw): the learning rate, the
 * moments' decays b1 and b2, eps, the weight decay, and the bias corrections bc1 = 1 - b1^t and
 * bc2 = 1 - b2^t of step t. One value, so that no two of seven floats can take each other's place. */
#ifndef SURGE_BACKEND_ADAMW_COEFS_H
#define SURGE_BACKEND_ADAMW_COEFS_H

typedef struct adamw_coefs {
  float lr, b1, b2, eps, wd, bc1, bc2;
} adamw_coefs_t;

#endif
