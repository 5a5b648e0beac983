/* GPT-2's byte-to-symbol map (bytes_to_unicode in openai/gpt-2's encoder.py). */
#include "tok/bytemap.h"

static int printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

uint32_t bytemap_symbol(uint8_t b) {
  if (printable(b)) return b;
  uint32_t k = 0; /* the rank of b among the non-printable bytes */
  for (int c = 0; c < b; c++) k += !printable(c);
  return 256 + k;
}

int bytemap_byte(uint32_t cp) {
  if (cp < 256) return printable((int)cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  for (int b = 0, k = 0; b < 256; b++)
    if (!printable(b) && k++ == (int)(cp - 256)) return b;
  return -1;
}

uint8_t bytemap_order(int i) {
  int k = 0;
  for (int b = 0; b < 256; b++)
    if (printable(b) && k++ == i) return (uint8_t)b;
  for (int b = 0; b < 256; b++)
    if (!printable(b) && k++ == i) return (uint8_t)b;
  return 0;
}

size_t bytemap_show(const uint8_t *b, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = bytemap_symbol(b[i]); /* < 0x800: one or two UTF-8 bytes */
    if (cp < 0x80) {
      out[k++] = (char)cp;
    } else {
      out[k++] = (char)(0xC0 | (cp >> 6));
      out[k++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  out[k] = '\0';
  return k;
}

long bytemap_unshow(const char *s, size_t n, uint8_t *out) {
  const unsigned char *u = (const unsigned char *)s;
  long k = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    if (u[i] < 0x80) {
      cp = u[i++];
    } else if ((u[i] & 0xE0) == 0xC0 && i + 1 < n && (u[i + 1] & 0xC0) == 0x80) {
      cp = ((uint32_t)(u[i] & 0x1F) << 6) | (u[i + 1] & 0x3F);
      i += 2;
    } else {
      return -1; /* every symbol is below U+0800 */
    }
    int b = bytemap_byte(cp);
    if (b < 0) return -1;
    out[k++] = (uint8_t)b;
  }
  return k;
}
