import { useSyncExternalStore } from "react";

/**
 * Light or dark: the system's choice by default (prefers-color-scheme in the CSS), or the one the
 * user picked with the switch, kept in this browser. Applied as data-theme on <html>.
 */
export type ThemeChoice = "system" | "light" | "dark";

const KEY = "wa-inbox.theme";
const listeners = new Set<() => void>();

function stored(): ThemeChoice {
  try {
    const value = localStorage.getItem(KEY);
    return value === "light" || value === "dark" ? value : "system";
  } catch {
    return "system";
  }
}

let choice: ThemeChoice = typeof localStorage === "undefined" ? "system" : stored();

export function applyTheme() {
  if (choice === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
}

export function setTheme(next: ThemeChoice) {
  choice = next;
  try {
    if (next === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, next);
  } catch {
    // Private mode without storage: the choice lasts for this page.
  }
  applyTheme();
  for (const l of listeners) l();
}

export function useTheme(): ThemeChoice {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => choice,
  );
}

export const NEXT_THEME: Record<ThemeChoice, ThemeChoice> = {
  system: "light",
  light: "dark",
  dark: "system",
};
