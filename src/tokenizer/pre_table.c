/* pre_table.c - what each GGUF `tokenizer.ggml.pre` name stands for: the split regexes
 * llama.cpp applies, in order, before byte-level BPE (llama.cpp src/llama-vocab.cpp at commit
 * 3f545bec, the commit of ../shared/vectors/tokenizer; docs/TOKENIZER.md). These are facts about
 * that format, copied as data. A name not in this table is refused: llama.cpp itself falls back
 * to "default" with a warning, which would tokenize such a model differently from its source. */
#include <stdio.h>
#include <string.h>

#include "tokenizer/internal.h"

#define CONTRACTIONS_CI "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

static const char *const N_DEFAULT[] = {"default", NULL};
static const char *const R_DEFAULT[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+",
                                        "[0-9][0-9][0-9]", NULL};

static const char *const N_LLAMA3[] = {"llama3",    "llama-v3",  "llama-bpe", "falcon3",
                                       "falcon-h1", "pixtral",   "midm-2.0",  "lfm2",
                                       "dbrx",      "smaug-bpe", NULL};
static const char *const R_LLAMA3[] = {
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_DEEPSEEK_LLM[] = {"deepseek-llm", NULL};
static const char *const R_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-"
    "\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1"
    "\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-"
    "\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-"
    "\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4"
    "\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-"
    "\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-"
    "\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-"
    "\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-"
    "\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-"
    "\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-"
    "\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    "\\s+$",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    "\\p{N}+",
    NULL};

static const char *const N_DEEPSEEK_CODER[] = {"deepseek-coder", NULL};
static const char *const R_DEEPSEEK_CODER[] = {
    "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    "\\p{N}", NULL};

static const char *const N_DEEPSEEK3[] = {"deepseek-v3", "hunyuan-dense", NULL};
static const char *const R_DEEPSEEK3[] = {
    "\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_FALCON[] = {"falcon", NULL};
static const char *const R_FALCON[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]", NULL};

static const char *const N_STARCODER[] = {"starcoder", "refact", "command-r",  "smollm",
                                          "codeshell", "exaone", "minerva-7b", NULL};
static const char *const R_STARCODER[] = {"\\p{N}", GPT2, NULL};

static const char *const N_GPT2[] = {
    "gpt-2",  "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",      "jina-v2-de", "a.x-4.0",
    "mellum", "mpt",   "olmo",    "jais",    "trillion", "granite-docling", "exaone4",    NULL};
static const char *const R_GPT2[] = {GPT2, NULL};

static const char *const N_QWEN2[] = {"qwen2",   "deepseek-r1-qwen", "kormo", "stablelm2",
                                      "hunyuan", "megrez",           NULL};
static const char *const R_QWEN2[] = {
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_QWEN35[] = {"qwen35", NULL};
static const char *const R_QWEN35[] = {
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_PORO[] = {"poro-chat", "bloom", "gpt3-finnish", NULL};
static const char *const R_PORO[] = {" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+",
                                     NULL};

static const char *const N_CHATGLM4[] = {"glm4", "chatglm-bpe", NULL}; /* llama3's split */

static const char *const N_VIKING[] = {"viking", NULL};
static const char *const R_VIKING[] = {" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+",
                                       "\\p{N}", NULL};

static const char *const N_TEKKEN[] = {"tekken", NULL};
static const char *const R_TEKKEN[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?"
    "((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_GPT4O[] = {"gpt-4o", "llama4", "minimax-m2", NULL};
static const char *const R_GPT4O[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" CONTRACTIONS_CI
    "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" CONTRACTIONS_CI
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_SEED_CODER[] = {"seed-coder", NULL};
static const char *const R_SEED_CODER[] = {
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

static const char *const N_GROK2[] = {"grok-2", NULL}; /* qwen2's split */

static const char *const N_BAILING[] = {"bailingmoe", "bailingmoe2", "llada-moe", NULL};
static const char *const R_BAILING[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};

static const tk_pre_entry TABLE[] = {
    {N_DEFAULT, R_DEFAULT, false},
    {N_LLAMA3, R_LLAMA3, true},
    {N_DEEPSEEK_LLM, R_DEEPSEEK_LLM, false},
    {N_DEEPSEEK_CODER, R_DEEPSEEK_CODER, false},
    {N_DEEPSEEK3, R_DEEPSEEK3, false},
    {N_FALCON, R_FALCON, false},
    {N_STARCODER, R_STARCODER, false},
    {N_GPT2, R_GPT2, false},
    {N_QWEN2, R_QWEN2, false},
    {N_QWEN35, R_QWEN35, false},
    {N_PORO, R_PORO, false},
    {N_CHATGLM4, R_LLAMA3, false},
    {N_VIKING, R_VIKING, false},
    {N_TEKKEN, R_TEKKEN, true},
    {N_GPT4O, R_GPT4O, false},
    {N_SEED_CODER, R_SEED_CODER, false},
    {N_GROK2, R_QWEN2, false},
    {N_BAILING, R_BAILING, false},
};

const tk_pre_entry *fdl_tk_pre_find(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof TABLE / sizeof *TABLE; i++)
    for (const char *const *n = TABLE[i].names; *n; n++)
      if (strlen(*n) == len && !memcmp(*n, name, len)) return &TABLE[i];
  return NULL;
}

void fdl_tk_pre_names(char *out, size_t cap) {
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof TABLE / sizeof *TABLE; i++)
    for (const char *const *n = TABLE[i].names; *n && o + 1 < cap; n++) {
      int k = snprintf(out + o, cap - o, "%s%s", o ? ", " : "", *n);
      if (k < 0) break;
      o += (size_t)k;
    }
}
