/*
 * The scalar kernels' one blocking number: decode's chunk (decode.c), which
 * dispatch/tiles.c reports to the kernel tests like every ISA's tiles. The
 * other scalar kernels are plain loops, one element at a time.
 */
#ifndef SA_SCALAR_TILES_H
#define SA_SCALAR_TILES_H

enum {
  SA_SCALAR_DECODE_CHUNK = 64, /* decode: keys per score / online / wsum step */
};

#endif /* SA_SCALAR_TILES_H */
