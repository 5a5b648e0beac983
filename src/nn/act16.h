/* Activations held in bfloat16 by a training model (model_t.act16): in precision = bf16 every matrix
 * product rounds its operands to bfloat16, so an activation that only products read (linear layers,
 * attention, the tied output projection) loses nothing when it is stored rounded: its readers get the
 * same values, and the model holds half its bytes. GELU, which reads its input rounded too, likewise, and attention,
 * whose backward reads its own output rounded. In a gpt: the layer norms' outputs, the query-key-value products'
 * (read by attention), the attentions', the GELUs' and their inputs. */
#ifndef SURGE_ACT16_H
#define SURGE_ACT16_H

#include "nn/model.h"

/* Which nodes a training model being planned (fusion, epilogues and recomputed segments known, no buffer
 * yet) holds in bfloat16, into held[i] (g->n entries); returns how many, and into *nbufs the float buffers a call
 * needs (model_t.nact_f32). None unless the backend's context says act16 and the layout gives allowed(). A node is
 * held where its backward reads its output only rounded (layer_ops_t.output_unread; where it runs another node's
 * forward in its epilogue, a linear its GELU, that node takes it as its input and rounds it: rounds_input), every
 * reader takes it as input 0 of a layer that only rounds it (layer_ops_t.rounds_input: matrix products, GELU) and
 * runs on its samples (allowed(arg, node, reader): nothing moves between ranks), and it is not the input, the
 * output, a node fused with its ReLU, or one whose buffers a recomputed segment lends or borrows. A call reads held
 * rows and writes held outputs in floats (buffers of the largest held activation, model_t.act_f32: as many as one
 * call takes at once, 3 where a linear reads a held input and writes its held output and its GELU's): where they
 * would take more than holding saves (few held activations beside a large one), none is held. */
int act16_plan(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, int *held, int *nbufs);

/* A call's context is being built: no float buffer is given to it yet (the ones given next are distinct). */
void act16_call(model_t *m);
/* Node i's input slot k on samples [off, off + B) as its layer reads it: the wiring's buffer (m->in), or, for a
 * held producer, a float buffer holding values that round to its rows: the producer's own output where a buffer
 * still holds it (the forward: the reader runs soon after the writer), else its rows widened into one. */
float *act16_input(model_t *m, int i, int k, int off, int B);
/* Node i's own output on samples [off, off + B) for its backward: its activation; held, NULL where its backward never
 * reads it, else (attention's D, or a linear whose GELU's derivative reads it: rounded, act16_plan) a float buffer
 * that rounds to its rows, as act16_input gives them. */
float *act16_own(model_t *m, int i, int off, int B);
/* Where node j's forward writes its output on samples [off, off + B): its activation, or for a held node one of
 * the float buffers (not the one the call's input was just given), which act16_store then rounds into
 * m->act16[j]. Call it after the call's inputs. */
float *act16_output(model_t *m, int j, int off, int B);
/* After node j's forward on [off, off + B): a held node's output rounded into m->act16[j]. */
void act16_store(model_t *m, int j, int off, int B);

#endif
