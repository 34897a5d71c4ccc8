/** Indexes the per-(day, variant) tables: rows are days in order, columns variants in order. */
export class DayCells {
  readonly days: number[];
  readonly variantCount: number;
  /** Column of each variant index. */
  readonly position: Int32Array;
  readonly #firstDay: number;
  readonly #rank: Int32Array;

  constructor(days: number[], position: Int32Array) {
    this.days = days.slice().sort((a, b) => a - b);
    this.variantCount = position.length;
    this.position = position;
    this.#firstDay = this.days[0] ?? 0;
    const span = this.days.length === 0 ? 0 : this.days[this.days.length - 1] - this.#firstDay + 1;
    this.#rank = new Int32Array(span);
    this.days.forEach((day, rank) => this.#rank[day - this.#firstDay] = rank);
  }

  get size(): number {
    return this.days.length * this.variantCount;
  }

  /** The rank of `day` among the days. */
  rankOf(day: number): number {
    return this.#rank[day - this.#firstDay];
  }

  /** The cell of `day` and variant index `variant`. */
  of(day: number, variant: number): number {
    return this.#rank[day - this.#firstDay] * this.variantCount + this.position[variant];
  }

  /**
   * Day ranks by stored first day (`dayLimit - day`, see `RecordLayout`): the rank of `stored` is
   * `rank[base - stored]`.
   */
  storedRanks(dayLimit: number): { rank: Int32Array; base: number } {
    return { rank: this.#rank, base: dayLimit - this.#firstDay };
  }

  /** Turns per-cell counts into running totals over days. */
  accumulate(table: Float64Array): void {
    for (let i = this.variantCount; i < table.length; i++) table[i] += table[i - this.variantCount];
  }
}
