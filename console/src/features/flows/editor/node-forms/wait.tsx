import { WAIT_MINUTES } from "../../../../../../src/flows/node-types/wait.js";
import { Next, type NodeForm } from "./fields";

export const wait: NodeForm = {
  Fields: (props) => {
    const { config: c, set } = props;
    return (
      <>
        <div className="field">
          <label htmlFor="insp-minutes">Minutes to wait</label>
          <input
            id="insp-minutes"
            type="number"
            min={WAIT_MINUTES.min}
            max={WAIT_MINUTES.max}
            value={typeof c.minutes === "number" ? c.minutes : ""}
            onChange={(e) => set("minutes")(e.target.value === "" ? "" : Number(e.target.value))}
          />
          <p className="hint">From 1 minute to 30 days ({WAIT_MINUTES.max.toLocaleString("en")} minutes).</p>
        </div>
        <Next {...props} />
      </>
    );
  },
  summary: (c) =>
    typeof c.minutes === "number" ? `Wait ${c.minutes} minute${c.minutes === 1 ? "" : "s"}` : "Wait",
};
