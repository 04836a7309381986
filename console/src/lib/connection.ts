import { useSyncExternalStore } from "react";

/**
 * Whether the service answers. Any request that fails to reach it marks the connection lost
 * (a banner says so while queries retry); the next answer of any kind marks it back.
 */
let online = true;
const listeners = new Set<() => void>();

export function setOnline(value: boolean) {
  if (online === value) return;
  online = value;
  for (const listener of listeners) listener();
}

export function useOnline() {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => online,
  );
}
