/**
 * A group commit: one write under way at a time, and what arrives meanwhile goes together in the
 * next one. Each `add` resolves once the write holding its items is done (or rejects with that
 * write's failure). Used where many small writes arrive at once (tiny uploads) and each would
 * otherwise pay a database round trip of its own.
 */
export class GroupWrite<T> {
  readonly #write: (items: T[]) => Promise<void>;
  #next: { items: T[]; done: PromiseWithResolvers<void> } | null = null;
  #writing = false;

  /** `write` writes one group (never an empty one). */
  constructor(write: (items: T[]) => Promise<void>) {
    this.#write = write;
  }

  add(...items: T[]): Promise<void> {
    const group = this.#next ??= { items: [], done: Promise.withResolvers<void>() };
    group.items.push(...items);
    if (!this.#writing) this.#run();
    return group.done.promise;
  }

  async #run(): Promise<void> {
    this.#writing = true;
    while (this.#next) {
      const { items, done } = this.#next;
      this.#next = null;
      try {
        await this.#write(items);
        done.resolve();
      } catch (error) {
        done.reject(error);
      }
    }
    this.#writing = false;
  }
}
