/**
 * Waits for `work`, or until `deadline` (epoch ms) if that comes first; `work` itself is left
 * running. For shutdown steps that talk to the database: a statement that never answers (a
 * network that drops packets without a reset, a frozen server) must not hold a stop forever.
 */
export async function beforeDeadline(work: Promise<unknown> | undefined, deadline: number): Promise<void> {
  if (!work) return;
  if (!Number.isFinite(deadline)) {
    await work;
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
  });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
