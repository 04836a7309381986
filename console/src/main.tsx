import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app";
import { NetworkError } from "./lib/api";
import { applyTheme } from "./lib/theme";
import "./styles.css";

applyTheme();

const client = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      refetchOnWindowFocus: true,
      // A lost connection is retried until the service is back (the banner says so);
      // an answer from the API is final.
      retry: (count, error) => error instanceof NetworkError && count < 1000,
      retryDelay: (count) => Math.min(500 * 2 ** count, 5_000),
    },
    mutations: { retry: false },
  },
});

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={client}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  );
}
