"""Writes the example model files (run: python examples/make_examples.py).

RC-n chains exactly as ../shared/design/BENCHMARKS.md defines them, as YAML and URDF; a
branched tree with multi-DOF joints; a floating-base quadruped. The committed files are this
script's output.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RC_INERTIA = "[0.0016666666666666668, 0.08416666666666667, 0.08416666666666667]"   # 1/600, 101/1200


def rc_yaml(n):
    lines = [f"# RC{n}: revolute serial chain of BENCHMARKS.md (Si & Guenter Table 1).",
             "# Joint i rotates about z of its own frame; joints 2..n sit at (1, 0, 0) in the parent",
             "# frame, turned by Rx(+90 deg). Every link: 1 kg, COM (0.5, 0, 0), a 1 x 0.1 x 0.1 m box.",
             f"name: rc{n}", "gravity: [0, 0, -9.81]", "bodies:"]
    for i in range(1, n + 1):
        parent = "world" if i == 1 else f"link{i - 1}"
        lines += [f"  - name: link{i}", f"    parent: {parent}",
                  f"    joint: {{name: joint{i}, type: revolute, axis: [0, 0, 1]"
                  + ("}" if i == 1 else ", xyz: [1, 0, 0], rotation: [[1, 0, 0], [0, 0, -1], [0, 1, 0]]}"),
                  "    mass: 1.0", "    com: [0.5, 0, 0]", f"    inertia: {RC_INERTIA}"]
    return "\n".join(lines) + "\n"


def rc_urdf(n):
    out = ['<?xml version="1.0"?>', f'<!-- RC{n}: revolute serial chain of BENCHMARKS.md -->',
           f'<robot name="rc{n}_urdf">', '  <link name="base"/>']
    for i in range(1, n + 1):
        out += [f'  <link name="link{i}">', '    <inertial>', '      <origin xyz="0.5 0 0" rpy="0 0 0"/>',
                '      <mass value="1.0"/>',
                '      <inertia ixx="0.0016666666666666668" ixy="0" ixz="0" iyy="0.08416666666666667"'
                ' iyz="0" izz="0.08416666666666667"/>', '    </inertial>', '  </link>']
        parent = "base" if i == 1 else f"link{i - 1}"
        origin = '<origin xyz="0 0 0" rpy="0 0 0"/>' if i == 1 else \
            '<origin xyz="1 0 0" rpy="1.5707963267948966 0 0"/>'
        out += [f'  <joint name="joint{i}" type="revolute">', f'    <parent link="{parent}"/>',
                f'    <child link="link{i}"/>', f'    {origin}', '    <axis xyz="0 0 1"/>',
                '    <limit lower="-3.14" upper="3.14" effort="100" velocity="10"/>', '  </joint>']
    out.append("</robot>")
    return "\n".join(out) + "\n"


BRANCHED = """\
# A branched tree with multi-DOF joints: a hub turning about z carries two arms.
# Arm a: spherical (ZYX chart) shoulder, universal elbow, helical wrist.
# Arm b: cylindrical shoulder, composite (prismatic + revolute) elbow, exponential-coordinate ball wrist.
# A third branch: a planar joint, and a translational joint with a heavy tip.
name: branched
gravity: [0, 0, -9.81]
bodies:
  - name: hub
    parent: world
    joint: {name: hub_turn, type: revolute, axis: [0, 0, 1]}
    mass: 4.0
    com: [0, 0, 0.1]
    inertia: [0.08, 0.08, 0.12]
  - name: a_upper
    parent: hub
    joint: {name: a_shoulder, type: spherical, chart: ZYX, xyz: [0.3, 0, 0.2], rpy: [0, 0.3, 0]}
    mass: 1.5
    com: [0.25, 0, 0]
    inertia: [0.004, 0.03, 0.03]
  - name: a_lower
    parent: a_upper
    joint: {name: a_elbow, type: universal, xyz: [0.5, 0, 0]}
    mass: 1.0
    com: [0.2, 0.01, 0]
    inertia: {ixx: 0.002, iyy: 0.015, izz: 0.016, ixy: 0.0005, ixz: 0, iyz: 0}
  - name: a_hand
    parent: a_lower
    joint: {name: a_wrist, type: helical, axis: [1, 0, 0], pitch: 0.02, xyz: [0.4, 0, 0]}
    mass: 0.3
    com: [0.05, 0, 0]
    inertia: [0.0004, 0.0005, 0.0005]
  - name: b_upper
    parent: hub
    joint: {name: b_shoulder, type: cylindrical, axis: [0, 0.6, 0.8], xyz: [-0.3, 0, 0.2]}
    mass: 1.2
    com: [-0.2, 0, 0.05]
    inertia: [0.003, 0.02, 0.021]
  - name: b_lower
    parent: b_upper
    joint:
      name: b_elbow
      type: composite
      parts:
        - {type: prismatic, axis: [1, 0, 0]}
        - {type: revolute, axis: [0, 1, 0]}
      xyz: [-0.4, 0, 0]
    mass: 0.8
    com: [-0.15, 0, 0]
    inertia: [0.001, 0.008, 0.008]
  - name: b_hand
    parent: b_lower
    joint: {name: b_wrist, type: ball_exp, xyz: [-0.3, 0, 0]}
    mass: 0.25
    com: [-0.04, 0.01, 0]
    inertia: [0.0003, 0.0004, 0.0004]
  - name: c_slider
    parent: hub
    joint: {name: c_plane, type: planar, normal: [0, 0, 1], xyz: [0, 0.3, 0.2]}
    mass: 0.6
    com: [0, 0.1, 0]
    inertia: [0.001, 0.0005, 0.001]
  - name: c_tip
    parent: c_slider
    joint: {name: c_shift, type: translational, xyz: [0, 0.2, 0]}
    mass: 2.0
    com: [0, 0, 0]
    inertia: [0.01, 0.01, 0.01]
"""


def quadruped():
    lines = ["# A floating-base quadruped: a trunk on a 3-D free joint (x, y, z, then XYZ Euler angles),",
             "# four legs with a hip (about x), a thigh and a knee (about y).",
             "name: quadruped", "gravity: [0, 0, -9.81]", "bodies:",
             "  - name: trunk", "    parent: world",
             "    joint: {name: root, type: free, chart: XYZ}",
             "    mass: 12.0", "    com: [0.01, 0, 0]", "    inertia: [0.08, 0.3, 0.33]"]
    for leg, (x, y) in {"fl": (0.3, 0.15), "fr": (0.3, -0.15), "hl": (-0.3, 0.15), "hr": (-0.3, -0.15)}.items():
        lines += [f"  - name: {leg}_hip", "    parent: trunk",
                  f"    joint: {{name: {leg}_hip_joint, type: revolute, axis: [1, 0, 0], xyz: [{x}, {y}, 0]}}",
                  "    mass: 0.7", f"    com: [0, {0.03 if y > 0 else -0.03}, 0]", "    inertia: [0.0006, 0.0008, 0.0006]",
                  f"  - name: {leg}_thigh", f"    parent: {leg}_hip",
                  f"    joint: {{name: {leg}_thigh_joint, type: revolute, axis: [0, 1, 0], xyz: [0, {0.08 if y > 0 else -0.08}, 0]}}",
                  "    mass: 1.0", "    com: [0, 0, -0.1]", "    inertia: [0.005, 0.005, 0.0008]",
                  f"  - name: {leg}_calf", f"    parent: {leg}_thigh",
                  f"    joint: {{name: {leg}_knee_joint, type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.2]}}",
                  "    mass: 0.2", "    com: [0, 0, -0.1]", "    inertia: [0.002, 0.002, 0.0001]"]
    lines += ["initial:", "  q: {root: [0, 0, 0.45, 0, 0, 0]}"]
    return "\n".join(lines) + "\n"


def main():
    files = {"branched.yaml": BRANCHED, "quadruped.yaml": quadruped()}
    for n in (20, 50, 100):
        files[f"rc{n}.yaml"] = rc_yaml(n)
        files[f"rc{n}.urdf"] = rc_urdf(n)
    for name, text in files.items():
        with open(os.path.join(HERE, name), "w") as fh:
            fh.write(text)
    return sorted(files)


if __name__ == "__main__":
    print("\n".join(main()))
