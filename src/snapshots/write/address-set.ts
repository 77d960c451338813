// Finds resource addresses repeated within a workspace in a file too large to keep the addresses of:
// a hundred million rows would need gigabytes as strings. Each (workspace, address) keeps only a 64-bit
// hash (8 bytes a row, outside the JS heap); after the pass, the sorted hashes name the few candidates, and
// a second read of the file confirms them with the real strings and reports their lines.

/** Two independent 32-bit hashes of the key's UTF-16 code units: FNV-1a and a multiply-xorshift mix. */
function hash64(workspace: string, address: string, out: Uint32Array, at: number): void {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  const step = (c: number) => {
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  };
  for (let i = 0; i < workspace.length; i++) step(workspace.charCodeAt(i));
  step(10);
  for (let i = 0; i < address.length; i++) step(address.charCodeAt(i));
  // Little-endian pairs: element `at / 2` of the BigUint64Array view over the same bytes.
  out[at] = b >>> 0;
  out[at + 1] = a >>> 0;
}

export class AddressSet {
  private words = new Uint32Array(2 * 1024);
  private n = 0;
  private readonly scratch = new Uint32Array(2);

  add(workspace: string, address: string): void {
    if (2 * this.n === this.words.length) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    hash64(workspace, address, this.words, 2 * this.n);
    this.n++;
  }

  /** Hashes seen more than once: every repeated key is among them (and, rarely, a colliding pair that is not). */
  candidates(): Set<bigint> {
    const hashes = new BigUint64Array(this.words.buffer, 0, this.n).sort();
    const repeated = new Set<bigint>();
    for (let i = 1; i < hashes.length; i++) if (hashes[i] === hashes[i - 1]) repeated.add(hashes[i]!);
    this.words = new Uint32Array(0);
    this.n = 0;
    return repeated;
  }

  /** The hash `add` stored for a key, to test it against `candidates()` on the second read. */
  hashOf(workspace: string, address: string): bigint {
    hash64(workspace, address, this.scratch, 0);
    return (BigInt(this.scratch[1]!) << 32n) | BigInt(this.scratch[0]!);
  }
}
