/**
 * Background services started with the server (analysis worker, timer). Each feature adds its
 * start function here; the answer stops them all.
 */
import type { AppDeps } from "./app.ts";

export type Stop = () => Promise<void>;

export function startServices(_deps: AppDeps): Promise<Stop> {
  const stops: Stop[] = [];
  return Promise.resolve(async () => {
    for (const stop of stops.reverse()) await stop();
  });
}
