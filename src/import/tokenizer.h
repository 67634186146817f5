/* Tokenizers for `ppcc generate --prompt` (DESIGN §9): text to ids and back.
 * Two models cover the checkpoints people run:
 *  - SentencePiece-style (Llama, Mistral, Gemma): spaces become U+2581,
 *    symbols (UTF-8 characters) merge by the merged piece's score (GGUF
 *    tokenizer.ggml.model "llama") or by merge rank (tokenizer.json BPE);
 *    a piece outside the vocabulary falls back to <0xXX> byte tokens;
 *  - byte-level BPE (GPT-2, Qwen2, Llama 3): the text is cut into words by
 *    the model's pre-tokenizer pattern (GPT-2's, Qwen2's or Llama 3's,
 *    matched by hand-written code over Unicode classes), each word's bytes
 *    are mapped to GPT-2's printable characters and merged by rank.
 * Both read from GGUF metadata (tokenizer.ggml.*) or from a Hugging Face
 * DIR/tokenizer.json; the same struct holds either. Added/special tokens
 * (<s>, <|endoftext|>, ...) written in the text are matched first, as
 * transformers does. A tokenizer.json NFC normalizer is applied to the text
 * between them (Unicode's NFC, tables from tools/gen_unicode_tables.py); GGUF
 * text is not normalized, as llama.cpp does not. */
#ifndef PPCC_TOKENIZER_H
#define PPCC_TOKENIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ppcc/diag.h"

typedef enum { TOK_MERGE_BY_SCORE, TOK_MERGE_BY_RANK } tok_merge;
/* the pre-tokenizer pattern that cuts text into words (none: one word) */
typedef enum { TOK_PRE_NONE, TOK_PRE_GPT2, TOK_PRE_QWEN2, TOK_PRE_LLAMA3, TOK_PRE_METASPACE } tok_pre;

typedef struct tok_map { /* open addressing: key -> value, both 64-bit; key 0 unused */
  uint64_t *keys;
  int64_t *vals;
  size_t cap, count;
} tok_map;

typedef struct tokenizer {
  long n_vocab;
  char **text;          /* token strings as the vocabulary spells them */
  size_t *len;
  float *score;         /* merge-by-score models */
  bool *special;        /* special tokens: skipped by decode(skip_special) */
  bool *literal;        /* added/control tokens: matched in raw text first, decoded as their text */
  tok_map by_text;      /* hash of a string -> id (collisions chained by probing, text compared) */
  tok_map pairs;        /* (left id, right id) -> rank << 32 | merged id (merge-by-rank) */
  tok_merge merge;
  tok_pre pre;
  bool byte_level;      /* GPT-2 byte <-> printable character map */
  bool byte_fallback;   /* <0xXX> tokens for pieces outside the vocabulary */
  bool ignore_merges;   /* a whole word in the vocabulary is one token (Llama 3) */
  bool nfc;             /* Unicode NFC first (tokenizer.json normalizer "NFC") */
  bool space_to_meta;   /* ' ' -> U+2581 */
  bool prefix_meta;     /* U+2581 (or ' ' for byte-level) in front of the text */
  bool prefix_first_only; /* ... only in front of the text's first stretch (not after a special token) */
  bool prefix_if_absent;  /* ... only where the text does not start with a space already */
  bool strip_first_space; /* decoding drops one leading space */
  long unk;             /* -1: none */
  long byte_id[256];    /* <0xXX> ids, -1 where missing */
  long *specials;       /* ids of the literal tokens, longest text first */
  long n_specials;
  long prefix[4], suffix[4]; /* ids added around the text (BOS, EOS) */
  int n_prefix, n_suffix;
  int64_t eos[8];       /* ids that end generation */
  int n_eos;
} tokenizer;

/* SOURCE's tokenizer: DIR/tokenizer.json (EOS ids from DIR's
 * generation_config.json or config.json) or a GGUF file's tokenizer.ggml.*.
 * Errors are one line naming the file and the key. */
ppcc_status tokenizer_load(const char *source, tokenizer **out, ppcc_diag *d);
/* From tokenizer.json text (fuzzing); path names it in messages. */
ppcc_status tokenizer_load_hf_json(const char *path, const char *json, size_t len, tokenizer **out, ppcc_diag *d);
void tokenizer_free(tokenizer *t);
/* The EOS ids of SOURCE without its tokenizer (config files or GGUF
 * metadata); *n 0 when none is given. */
ppcc_status tokenizer_eos_of_source(const char *source, int64_t *eos, int max, int *n, ppcc_diag *d);

/* text -> *ids (malloc'd, *n of them), with the tokenizer's BOS/EOS when
 * add_special (as transformers' tokenizer(text) does by default). */
ppcc_status tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special, int64_t **ids, long *n,
                             ppcc_diag *d);
/* The bytes of token id appended to *buf (grown as needed): first says the
 * token starts the decoded text (a leading space may be dropped). Special
 * tokens are skipped when skip_special. Returns false when out of memory. */
bool tokenizer_piece(const tokenizer *t, int64_t id, bool first, bool skip_special, char **buf, size_t *len,
                     size_t *cap);
bool tokenizer_is_eos(const tokenizer *t, int64_t id);

/* Decoded text as transformers' decode(ids, skip_special_tokens=True) gives
 * it, token by token: bytes that are not valid UTF-8 become U+FFFD (one per
 * maximal invalid part for byte-level models, one per byte of a run of
 * <0xXX> tokens that is not valid UTF-8 for byte-fallback ones); an
 * incomplete character waits for the next token. */
typedef struct tok_stream {
  const tokenizer *t;
  bool first;
  char pending[64];   /* bytes not yet written: an unfinished character or byte-token run */
  size_t n_pending;
  bool pending_bytes; /* pending holds a run of <0xXX> tokens */
} tok_stream;
void tok_stream_init(tok_stream *s, const tokenizer *t);
/* The text that token id completes, appended to *buf; false when out of memory. */
bool tok_stream_push(tok_stream *s, int64_t id, char **buf, size_t *len, size_t *cap);
/* Whatever is still pending (as U+FFFD where incomplete). */
bool tok_stream_end(tok_stream *s, char **buf, size_t *len, size_t *cap);

/* internals shared by the tokenizer files */
bool tok_is_letter(uint32_t cp);
bool tok_is_number(uint32_t cp);
#define TOK_MAX_DECOMPOSITION 4
int tok_combining_class(uint32_t cp); /* 0 for starters */
/* The full canonical decomposition of cp into out (Hangul syllables
 * excluded); returns its length, 0 where cp has none. */
int tok_canonical_decomposition(uint32_t cp, uint32_t out[TOK_MAX_DECOMPOSITION]);
uint32_t tok_primary_composite(uint32_t first, uint32_t second); /* 0: none (Hangul excluded) */
/* s[0..n) in Unicode NFC, malloc'd into *out (*out_len bytes, NUL after);
 * bytes that are not well-formed UTF-8 pass through unchanged and nothing
 * composes across them. Returns false when out of memory. */
bool tok_nfc(const char *s, size_t n, char **out, size_t *out_len);
uint64_t tok_hash(const char *s, size_t n);
bool tok_map_put(tok_map *m, uint64_t key, int64_t val);
int64_t *tok_map_get(const tok_map *m, uint64_t key);
long tok_find(const tokenizer *t, const char *s, size_t n); /* id of a string, -1 if absent */
bool tok_add_token(tokenizer *t, long id, const char *s, size_t n); /* vocabulary entry (ids < n_vocab) */
bool tok_finish(tokenizer *t); /* after the vocabulary: byte ids, specials order */
/* the character GPT-2's byte-level map gives byte b (a code point < 324) */
uint32_t tok_byte_char(unsigned b);
#endif
