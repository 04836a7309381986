import { useQuery } from "@tanstack/react-query";
import { api } from "./api";
import type { Me } from "./types";

export const meQuery = {
  queryKey: ["me"],
  queryFn: () => api<Me>("/api/me", { allowUnauthorized: true }),
  staleTime: 30_000,
  retry: false,
} as const;

/** The signed-in user, their role and account (undefined while loading, an error when signed out). */
export function useMe() {
  return useQuery(meQuery);
}

export function useIsOwner() {
  const me = useMe();
  return me.data?.profile.role === "owner";
}
