/* The modern format's wire layer (see wire.h). */

#include "decode/wire.h"

#include "common/varint.h"

int wire_decode(const u8 *p, size_t end, const u8 *table, WireRecords *r, WireFault *fault) {
    /* Locals, not r's fields, in the loop: stores through the u8 columns
     * could alias the fields and force reloads. */
    u8 *codes = r->codes;
    u32 *start = r->start;
    u64 *vals = r->vals;
    size_t ccap = r->ccap, scap = r->scap, vcap = r->vcap, n = 0, nv = 0, i = 0;
    int kind = WIRE_OK;
    /* Records average more than two bytes: size for that, grow if wrong. */
    if (grow((void **)&codes, &ccap, end / 2 + 16, 1) || grow((void **)&start, &scap, end / 2 + 17, 4) ||
        grow((void **)&vals, &vcap, end + 16, 8)) {
        kind = WIRE_NO_MEMORY;
        goto out;
    }
    while (i < end) {
        size_t rec = i;
        u8 code = p[i];
        u8 t = table[code];
        if (!(t & 0x80)) {
            kind = WIRE_INVALID_TYPE;
            *fault = (WireFault){code, i};
            break;
        }
        i++;
        unsigned na = t & 0x1f;
        if ((n + 1 >= ccap && grow((void **)&codes, &ccap, n + 2, 1)) ||
            (n + 2 >= scap && grow((void **)&start, &scap, n + 3, 4)) ||
            (nv + na + 2 > vcap && grow((void **)&vals, &vcap, nv + na + 2, 8))) {
            kind = WIRE_NO_MEMORY;
            break;
        }
        codes[n] = code;
        start[n] = (u32)nv;
        int ok = 1;
        for (unsigned k = 0; k < na && ok == 1; k++)
            ok = uvarint(p, end, &i, &vals[nv++]);
        if (ok == 1 && (t & 0x20)) {
            u64 frames = vals[start[n] + 1];
            for (u64 k = 0; ok == 1 && k < frames; k++) {
                if (nv + 4 > vcap && grow((void **)&vals, &vcap, nv + 4, 8)) {
                    ok = -2;
                    break;
                }
                for (int f = 0; f < 4 && ok == 1; f++)
                    ok = uvarint(p, end, &i, &vals[nv++]);
            }
        }
        if (ok == 1 && (t & 0x40)) {
            u64 len;
            ok = uvarint(p, end, &i, &len);
            if (ok == 1 && len > end - i)
                ok = 0;
            if (ok == 1) {
                if (nv + 2 > vcap && grow((void **)&vals, &vcap, nv + 2, 8)) {
                    ok = -2;
                } else {
                    vals[nv++] = i;
                    vals[nv++] = len;
                    i += len;
                }
            }
        }
        if (ok != 1) {
            kind = ok == 0 ? WIRE_SHORT : ok == -1 ? WIRE_OVERFLOW : WIRE_NO_MEMORY;
            *fault = (WireFault){code, rec};
            break;
        }
        n++;
    }
    if (kind == WIRE_OK)
        start[n] = (u32)nv;
out:
    *r = (WireRecords){codes, start, vals, n, nv, ccap, scap, vcap};
    return kind;
}

void wire_free(WireRecords *r) {
    free(r->codes), free(r->start), free(r->vals);
    *r = (WireRecords){0};
}
