import { useQuery } from "@tanstack/react-query";
import { api } from "./api";
import type { Me } from "./types";

/**
 * The signed-in user. A 401 here goes the way of every other 401 (the app's unauthorized
 * handler sends the user to sign-in once); a lost connection is retried like any query rather
 * than taken for a signed-out user.
 */
export const meQuery = {
  queryKey: ["me"],
  queryFn: () => api<Me>("/api/me"),
  staleTime: 30_000,
} as const;

/** The signed-in user, their role and account (undefined while loading, an error when signed out). */
export function useMe() {
  return useQuery(meQuery);
}

export function useIsOwner() {
  const me = useMe();
  return me.data?.profile.role === "owner";
}

/** Pages that are for signed-out users: a 401 there sends nowhere. */
export const isAuthPath = (pathname: string) =>
  pathname.startsWith("/sign-in") ||
  pathname.startsWith("/sign-up") ||
  pathname.startsWith("/forgot-password") ||
  pathname.startsWith("/reset-password");

/** Sign-in, remembering the page (path and query) to come back to. */
export const signInPath = (from: string) => `/sign-in?next=${encodeURIComponent(from)}`;
