/** CPU time of this whole process (every thread, the DuckDB workers too) over `ms` of wall time, as a share of one core. */
export async function cpuShare(ms: number): Promise<number> {
  const before = process.cpuUsage();
  await new Promise((r) => setTimeout(r, ms));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / ms;
}
