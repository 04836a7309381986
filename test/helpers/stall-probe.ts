/**
 * Loaded into a child process (`--import tsx --import <this file>`): reports
 * each of its stalls on stderr, for the test to read from its output.
 */
import { stallLine, watchStalls } from "./stalls.js";

watchStalls((stall) => process.stderr.write(stallLine(stall)));
